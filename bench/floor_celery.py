"""The Celery app of ``bench/floor.py``: the platform's Celery settings (its broker, the
threads pool and its concurrency, late acks, prefetch 1) and kombu patches, with one task
that does nothing but count itself done, so that a worker's CPU per task is Celery's own."""

from __future__ import annotations

import os

import redis
from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")

from agent_platform.celery import guard_orphaned_redis_channels, reuse_redis_clients

guard_orphaned_redis_channels()
reuse_redis_clients()
app = Celery("floor", set_as_current=False)
app.config_from_object("django.conf:settings", namespace="CELERY")
DONE_KEY = f"bench-floor:{os.environ.get('PLATFORM_TASK_QUEUE', 'celery')}:done"
_counter = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))


@app.task(name="floor.noop")
def noop(n: int) -> None:
    _counter.incr(DONE_KEY)
