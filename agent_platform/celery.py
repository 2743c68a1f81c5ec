"""The Celery application. Its configuration is the ``CELERY_*`` Django settings."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")


def create_app(name: str = "agent_platform") -> Celery:
    """A Celery app configured from the Django settings, with every app's tasks."""
    celery_app = Celery(name, set_as_current=name == "agent_platform")
    celery_app.config_from_object("django.conf:settings", namespace="CELERY")
    celery_app.autodiscover_tasks()
    return celery_app


app = create_app()
