"""Celery tasks of the sessions app: thin shims over plain functions."""

from __future__ import annotations

from celery import shared_task

from agent_platform.conf import platform_settings
from sessions_app.maintenance import prune_log_lines as prune


@shared_task(name="sessions_app.tasks.prune_log_lines")
def prune_log_lines() -> int:
    """Keep the newest ``PLATFORM['LOG_LINES_KEPT']`` log lines (beat, every 10 minutes)."""
    return prune(keep=platform_settings.LOG_LINES_KEPT)
