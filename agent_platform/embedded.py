"""The embedded form's background services: a Celery worker and beat running as
threads of the serving process, over the in-memory broker.

Tasks take the same path as in the distributed form (``.delay()`` through a
broker to a worker); only the transport is in-process.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from celery import Celery
from celery.beat import EmbeddedService
from celery.worker import WorkController

logger = logging.getLogger(__name__)


class _ThreadWorker(WorkController):
    """A worker that says when its consumer is ready to take tasks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.ready = threading.Event()
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: Any) -> None:
        self.ready.set()


class EmbeddedServices:
    """Start with ``start()``; ``stop()`` asks both threads to finish."""

    def __init__(self, app: Celery, threads: int) -> None:
        self.app = app
        self.worker = _ThreadWorker(
            app=app,
            hostname=f"embedded@{socket.gethostname()}",
            pool="threads",
            concurrency=threads,
            loglevel="INFO",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
        )
        # beat's Service defaults to a file-based scheduler; use the configured one.
        self.beat = EmbeddedService(app, thread=True, scheduler_cls=app.conf.beat_scheduler)
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
        logger.info("embedded Celery worker (%s threads) and beat started", self.worker.concurrency)

    def stop(self) -> None:
        self.beat.stop()
        self.worker.stop(in_sighandler=False)
        self._worker_thread.join(timeout=10)
