"""Readiness: whether this deployment can take work now, for ``GET /readyz``.

``/healthz`` is liveness (the process answers, with its database). Readiness adds what a
turn needs besides: the Celery broker, the channel layer (WebSocket streams) and at least
one worker that answers. Each check is cheap and bounded (a Redis ``PING`` with a 1 s
timeout, ``SELECT 1``, and one Celery ``ping`` broadcast that returns at the first
answer, 1 s at most); a worker's answer is trusted for ``WORKER_FRESH_SECONDS``, so
frequent probes from many replicas do not each broadcast.

In the embedded form (no ``REDIS_URL``) the broker and the channel layer are in memory
and the worker threads are in the serving process: those checks answer ``"embedded"``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Literal

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from kombu.exceptions import KombuError

from agent_platform.conf import platform_settings

logger = logging.getLogger(__name__)

Check = Literal["database", "broker", "channel_layer", "workers"]
CHECKS: tuple[Check, ...] = ("database", "broker", "channel_layer", "workers")
# What each check answers when it passes: "ok", or "embedded" where the embedded form has
# nothing to reach. Anything else names the failure (details go to the log, not the probe).
PASSING = frozenset({"ok", "embedded"})
# Seconds any single check may take.
TIMEOUT = 1.0
# Seconds a worker's answer to a ping counts as recent.
WORKER_FRESH_SECONDS = 5.0

_worker_answered_at = float("-inf")


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        logger.warning("readiness: the database does not answer: %s", error)
        return "unreachable"
    return "ok"


def _redis(url: str, what: str) -> str:
    client = redis.Redis.from_url(url, socket_connect_timeout=TIMEOUT, socket_timeout=TIMEOUT)
    try:
        client.ping()
    except redis.RedisError as error:
        logger.warning("readiness: the %s does not answer: %s", what, error)
        return "unreachable"
    finally:
        client.close()
    return "ok"


def _broker_url() -> str:
    url = str(settings.CELERY_BROKER_URL)
    return url if url.startswith(("redis://", "rediss://")) else ""


def _broker() -> str:
    url = _broker_url()
    return _redis(url, "broker") if url else "embedded"


def _channel_layer() -> str:
    url = platform_settings.DOORBELL_REDIS_URL  # the channel layer's Redis (settings.CHANNELS_REDIS_URL)
    return _redis(url, "channel layer") if url else "embedded"


def _workers() -> str:
    global _worker_answered_at
    if not _broker_url():
        return "embedded"
    if time.monotonic() - _worker_answered_at < WORKER_FRESH_SECONDS:
        return "ok"
    from agent_platform.celery import app

    try:
        # A connection of its own that gives up at once: the app's retries forever.
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=1)
            answers = app.control.ping(timeout=TIMEOUT, limit=1, connection=conn)
    except (KombuError, redis.RedisError, OSError) as error:
        logger.warning("readiness: cannot ping the workers: %s", error)
        return "unreachable"
    if not answers:
        return "no worker answered"
    _worker_answered_at = time.monotonic()
    return "ok"


_RUN: dict[Check, Callable[[], str]] = {
    "database": _database,
    "broker": _broker,
    "channel_layer": _channel_layer,
    "workers": _workers,
}


def check(names: Iterable[Check] = CHECKS) -> dict[Check, str]:
    """Run the named checks, in ``CHECKS`` order; each answers a short string (``PASSING``
    when it passes). The worker check is skipped ("unreachable") when the broker fails."""
    wanted = set(names)
    results: dict[Check, str] = {}
    for name in CHECKS:
        if name not in wanted:
            continue
        if name == "workers" and results.get("broker", "ok") not in PASSING:
            results[name] = "unreachable"
            continue
        results[name] = _RUN[name]()
    return results


def ready(results: dict[Check, str]) -> bool:
    return all(result in PASSING for result in results.values())
