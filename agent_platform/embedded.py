"""The embedded form's background services: a Celery worker and beat running as
threads of the serving process, over the in-memory broker.

Tasks take the same path as in the distributed form (``.delay()`` through a
broker to a worker); only the transport is in-process.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import Celery
from celery.beat import Service
from celery.concurrency.base import apply_target

# ApplyResult is missing from the type stubs.
from celery.concurrency.thread import ApplyResult, TaskPool  # type: ignore[attr-defined]
from celery.worker import WorkController
from django.db import connections

from agent_platform.conf import platform_settings

logger = logging.getLogger(__name__)


def _apply_then_close_connections(*args: Any) -> Any:
    try:
        return apply_target(*args)
    finally:
        # Pool threads outlive tasks; leave no database connection behind
        # (a SQLite connection is cheap to reopen for the next task).
        connections.close_all()


class _ThreadPool(TaskPool):
    """Celery's thread pool, closing each thread's database connections after a task."""

    def on_apply(
        self,
        target: Any,
        args: Any = None,
        kwargs: Any = None,
        callback: Any = None,
        accept_callback: Any = None,
        **_: Any,
    ) -> ApplyResult:
        future = self.executor.submit(  # type: ignore[attr-defined]
            _apply_then_close_connections, target, args, kwargs, callback, accept_callback
        )
        return ApplyResult(future)


class _ThreadWorker(WorkController):
    """A worker that says when its consumer is ready to take tasks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.ready = threading.Event()
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: Any) -> None:
        self.ready.set()


class _BeatThread(threading.Thread):
    def __init__(self, app: Celery) -> None:
        super().__init__(name="celery-beat", daemon=True)
        # Service defaults to a file-based scheduler; use the configured one. A
        # short loop interval lets stop() return promptly.
        self.service = Service(app, max_interval=1, scheduler_cls=app.conf.beat_scheduler)

    def run(self) -> None:
        try:
            self.service.start()
        finally:
            connections.close_all()

    def stop(self) -> None:
        self.service.stop(wait=True)


class EmbeddedServices:
    """Start with ``start()``; ``stop()`` asks both threads to finish."""

    def __init__(self, app: Celery, threads: int) -> None:
        self.threads = threads
        self.worker = _ThreadWorker(
            app=app,
            hostname=f"embedded@{socket.gethostname()}",
            pool=_ThreadPool,
            concurrency=threads,
            loglevel="INFO",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
        )
        self.beat = _BeatThread(app)
        self._worker_thread = threading.Thread(target=self.worker.start, name="celery-worker", daemon=True)

    def start(self, timeout: float = 30.0) -> None:
        """Start the worker and beat; returns once the worker consumes.

        Raises:
            RuntimeError: when the worker is not ready within ``timeout`` seconds.
        """
        self._worker_thread.start()
        if not self.worker.ready.wait(timeout):
            raise RuntimeError(f"the embedded Celery worker did not start within {timeout:.0f} s")
        self.beat.start()
        logger.info("embedded Celery worker (%s threads) and beat started", self.threads)

    def stop(self) -> None:
        self.beat.stop()
        self.beat.join(timeout=10)
        self.worker.stop(in_sighandler=False)
        self._worker_thread.join(timeout=10)


@contextmanager
def embedded_services() -> Iterator[EmbeddedServices | None]:
    """The worker and beat threads around a serving block (``agent serve``, ``runserver``)
    in the embedded form, so the turns it accepts run; ``None`` in the distributed form,
    whose workers are processes of their own."""
    if not platform_settings.EMBEDDED_WORKER:
        yield None
        return
    from agent_platform.celery import app

    services = EmbeddedServices(app, platform_settings.EMBEDDED_WORKER_THREADS)
    services.start()
    try:
        yield services
    finally:
        services.stop()
