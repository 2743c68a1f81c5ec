"""Agent Platform: the Django project package.

Named ``agent_platform`` rather than ``platform``: a top-level package called
``platform`` shadows Python's standard module, and ``import uuid`` then fails.
"""

from agent_platform.celery import app as celery_app

__all__ = ["celery_app"]
