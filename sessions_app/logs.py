"""Server log lines kept in the database, read through ``GET /<slug>/v1/logs?after=N``.

``DatabaseLogHandler`` is wired in ``LOGGING`` for the ``agent_platform.hooks``,
``agents`` and ``sessions_app`` loggers. A line is tagged with what the record
carries as extras::

    logger.warning("hook failed", extra={"tenant_id": 3, "agent_slug": "weather", "session_id": "ses_..."})

Logging must never hurt the code that logs, so the handler:

- never raises: a line that cannot be written (database down, test without database
  access, a value that does not fit) is dropped;
- never recurses: it ignores ``django.db.backends`` and its own module's records, and
  records logged while it is writing;
- writes in its own short transaction: on the thread's connection in autocommit, or in
  a savepoint when the caller is inside a transaction (the line then commits, or rolls
  back, with it; a transaction that already failed is left alone);
- never touches the database from an event loop (Django's ORM is sync-only there):
  such records are written by a short-lived thread, at most a few at a time.

Retention: ``sessions_app.tasks.prune_log_lines`` keeps the newest lines.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import UTC, datetime
from typing import Any

from django.apps import apps
from django.db import connection, connections, transaction

IGNORED_LOGGERS = ("django.db.backends", __name__)
MAX_MESSAGE_CHARS = 8000
# Records from event loops waiting for a writer thread; more are dropped.
MAX_BACKGROUND_WRITES = 8


def _ignored(name: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in IGNORED_LOGGERS)


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _tenant_id(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class DatabaseLogHandler(logging.Handler):
    """A ``logging.Handler`` storing records as ``LogLine`` rows (see the module docstring)."""

    def __init__(self, level: int | str = logging.INFO) -> None:
        super().__init__(level)
        self._writing = threading.local()
        self._background = threading.BoundedSemaphore(MAX_BACKGROUND_WRITES)

    def emit(self, record: logging.LogRecord) -> None:
        if _ignored(record.name) or getattr(self._writing, "active", False) or not apps.ready:
            return
        try:
            fields = self._fields(record)
        except Exception:  # noqa: BLE001 -- an unformattable record goes to logging's own error report
            self.handleError(record)
            return
        if not _in_event_loop():
            self._write(fields)
        elif self._background.acquire(blocking=False):
            threading.Thread(target=self._write_in_thread, args=(fields,), daemon=True).start()

    def _fields(self, record: logging.LogRecord) -> dict[str, Any]:
        return {
            "at": datetime.fromtimestamp(record.created, tz=UTC),
            "level": record.levelname[:10],
            "logger": record.name[:200],
            "message": self.format(record)[:MAX_MESSAGE_CHARS],
            "tenant_id": _tenant_id(getattr(record, "tenant_id", None)),
            "agent_slug": str(getattr(record, "agent_slug", "") or "")[:100],
            "session_id": str(getattr(record, "session_id", "") or "")[:40],
        }

    def _write(self, fields: dict[str, Any]) -> None:
        from sessions_app.models import LogLine

        if connection.in_atomic_block and connection.needs_rollback:
            return
        self._writing.active = True
        try:
            with transaction.atomic():
                LogLine.objects.create(**fields)
        except Exception:  # noqa: BLE001 -- dropped by contract: logging never fails the caller
            return
        finally:
            self._writing.active = False

    def _write_in_thread(self, fields: dict[str, Any]) -> None:
        try:
            self._write(fields)
        finally:
            connections.close_all()
            self._background.release()
