"""Server log lines kept in the database, read through ``GET /<slug>/v1/logs?after=N``.

``DatabaseLogHandler`` is wired in ``LOGGING`` on the root logger. It keeps the
records of the platform's own loggers (``PLATFORM_LOGGERS``), records tagged with an
agent, and what agent code logs, whatever its logger: a turn and a hook dispatch run
inside ``agent_log_tags(...)``, so ``logging.getLogger(__name__)`` in a tool reaches
that agent's ``/v1/logs`` with the session id. A line is tagged with what the record
carries as extras, else with the tags of the agent running::

    logger.warning("hook failed", extra={"tenant_id": 3, "agent_slug": "weather", "session_id": "ses_..."})

Logging must never hurt the code that logs, so the handler:

- never raises: a line that cannot be written (database down, test without database
  access, a value that does not fit) is dropped;
- never recurses: it ignores ``django.db.backends`` and its own module's records, and
  records logged while it is writing;
- writes in its own short transaction: on the thread's connection in autocommit (a
  thread that had none gives the one it borrowed back at once), or in
  a savepoint when the caller is inside a transaction (the line then commits, or rolls
  back, with it; a transaction that already failed is left alone);
- never touches the database from an event loop (Django's ORM is sync-only there):
  such records are written by short-lived writer threads, at most
  ``MAX_BACKGROUND_WRITERS`` at a time. A record made while they are all busy waits in a
  queue that the writers empty before they end, one line per write, so a line that
  fails fails alone. Only past ``MAX_WAITING_LINES`` waiting (a flood no writer keeps up
  with) is a line dropped. No writer lives longer than the lines it has to write.

The console shows ``LOG_LEVEL`` (a worker's ``--loglevel``) and up, the database
keeps INFO and up whatever the console shows (``keep_info_for_the_database``), and
beat's maintenance tasks, which fire every few seconds, log at DEBUG
(``MaintenanceTasksAtDebug``).

Retention: ``sessions_app.tasks.prune_log_lines`` keeps the newest lines.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from pythonjsonlogger.json import JsonFormatter

from agent_platform import rls
from agent_platform.request_ids import current_request_id
from agent_platform.rows import insert

if TYPE_CHECKING:
    from agents.discovery import AgentSurface

IGNORED_LOGGERS = ("django.db.backends", __name__)
# Kept with or without an agent's tags (the admin lists them all).
PLATFORM_LOGGERS = ("agent_platform.hooks", "agents", "sessions_app")
MAX_MESSAGE_CHARS = 8000
# Writer threads for records made on event loops, and how many records may wait for one.
MAX_BACKGROUND_WRITERS = 8
MAX_WAITING_LINES = 10_000


# The agent whose code runs in this context (a turn, a hook dispatch); tasks and
# asyncio.to_thread copy the context, so a tool's lines inherit it.
_running_agent: ContextVar[dict[str, Any] | None] = ContextVar("running_agent", default=None)


def code_folders(surface: AgentSurface) -> tuple[str, ...]:
    """The folders an agent's code is imported from (its tree, its subagents', its
    extensions'), as written and resolved, each ending in a separator."""
    folders: set[Path] = set()
    surfaces = [surface]
    while surfaces:
        current = surfaces.pop()
        folders.add(current.path)
        folders |= {info.path for info in current.extensions.values() if info.path is not None}
        surfaces += current.subagents.values()
    return tuple(sorted({os.path.join(str(form), "") for folder in folders for form in (folder, folder.resolve())}))


@contextmanager
def agent_log_tags(
    surface: AgentSurface, *, agent_slug: str, tenant_id: int | None, session_id: str = ""
) -> Iterator[None]:
    """Inside the block, what the agent's code logs (any logger; a record made by a file of
    ``code_folders(surface)``) is kept as the agent's, for its ``/v1/logs``, and so is what
    the platform's loggers log::

        with agent_log_tags(surface, agent_slug="weather", tenant_id=3, session_id="ses_..."):
            ...
    """
    tags = {"agent_slug": agent_slug, "tenant_id": tenant_id, "session_id": session_id}
    token = _running_agent.set({"tags": tags, "folders": code_folders(surface)})
    try:
        yield
    finally:
        _running_agent.reset(token)


def _kept(record: logging.LogRecord, running: dict[str, Any] | None) -> bool:
    """The platform's own lines, lines tagged by their caller, and the running agent's code's."""
    if _under(record.name, PLATFORM_LOGGERS) or hasattr(record, "agent_slug"):
        return True
    # Not a library's line logged during a turn (an HTTP client's request line, say).
    return running is not None and record.pathname.startswith(running["folders"])


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _ignored(name: str) -> bool:
    return _under(name, IGNORED_LOGGERS)


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
        self._reset_writers()
        # A forked child (the prefork pool) has none of the parent's writer threads.
        os.register_at_fork(after_in_child=self._reset_writers)

    def _reset_writers(self) -> None:
        self._writers_lock = threading.Lock()
        self._writers = 0
        self._waiting: deque[dict[str, Any]] = deque()

    def emit(self, record: logging.LogRecord) -> None:
        if _ignored(record.name) or getattr(self._writing, "active", False) or not apps.ready:
            return
        running = _running_agent.get()
        if not _kept(record, running):
            return  # the console has it
        try:
            fields = self._fields(record, running["tags"] if running else {})
        except Exception:  # noqa: BLE001 -- an unformattable record goes to logging's own error report
            self.handleError(record)
            return
        if not _in_event_loop():
            self._write(fields)
            return
        with self._writers_lock:
            if self._writers >= MAX_BACKGROUND_WRITERS:
                if len(self._waiting) < MAX_WAITING_LINES:
                    self._waiting.append(fields)  # the next writer to finish a line takes it
                return
            self._writers += 1
        threading.Thread(target=self._write_in_thread, args=(fields,), daemon=True).start()

    def _fields(self, record: logging.LogRecord, running: dict[str, Any]) -> dict[str, Any]:
        def tag(name: str) -> Any:
            return getattr(record, name, None) or running.get(name)

        return {
            "at": datetime.fromtimestamp(record.created, tz=UTC),
            "level": record.levelname[:10],
            "logger": record.name[:200],
            "message": self.format(record)[:MAX_MESSAGE_CHARS],
            "tenant_id": _tenant_id(tag("tenant_id")),
            "agent_slug": str(tag("agent_slug") or "")[:100],
            "session_id": str(tag("session_id") or "")[:40],
            "request_id": str(getattr(record, "request_id", "") or current_request_id())[:100],
        }

    def _write(self, fields: dict[str, Any]) -> None:
        from sessions_app.models import LogLine

        if connection.in_atomic_block and connection.needs_rollback:
            return
        # A thread that held no connection (a worker's thread for a plain tool function,
        # any thread no request or task manages) gets one for the line and gives it back:
        # kept, it would stay borrowed from the pool for the thread's life.
        borrowed = connection.connection is None
        self._writing.active = True
        try:
            # The platform's own log: a line may name another tenant, or none.
            # Written out (agent_platform.rows): an agent's tools and hooks may log on every
            # turn. One statement commits by itself; inside a transaction, a savepoint keeps
            # a failed line from failing the caller's transaction.
            with rls.platform_scope(), transaction.atomic() if connection.in_atomic_block else nullcontext():
                insert(LogLine(**fields))
        except Exception:  # noqa: BLE001 -- dropped by contract: logging never fails the caller
            return
        finally:
            self._writing.active = False
            if borrowed:
                connection.close()

    def _write_in_thread(self, fields: dict[str, Any] | None) -> None:
        """Write ``fields``, then every line waiting, then end (under the lock, so a line
        queued as this writer ends is seen by it or finds a writer slot free). Each write
        gives back the connection it borrowed (``_write``): the thread ends holding none."""
        try:
            while fields is not None:
                self._write(fields)
                with self._writers_lock:
                    fields = self._waiting.popleft() if self._waiting else None
                    if fields is None:
                        self._writers -= 1
        except BaseException:
            with self._writers_lock:
                self._writers -= 1
            raise


class JsonLines(JsonFormatter):
    """``LOG_FORMAT=json``: one JSON object per record (python-json-logger), its extras as
    fields, and the running agent's tags (``agent_slug``, ``tenant_id``, ``session_id``)
    on the lines logged inside ``agent_log_tags``, as ``/v1/logs`` has them."""

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        super().add_fields(log_data, record, message_dict)
        running = _running_agent.get()
        for name, value in (running["tags"] if running else {}).items():
            if value not in (None, "") and log_data.get(name) in (None, ""):
                log_data[name] = value


def keep_info_for_the_database(root: logging.Logger, console_level: int) -> None:
    """After a Celery worker or beat set the root level from ``--loglevel``: that level is
    the console handlers', and the root lets INFO through for the database handler."""
    for handler in root.handlers:
        if not isinstance(handler, DatabaseLogHandler):
            handler.setLevel(console_level)
    root.setLevel(min(console_level, logging.INFO))


# What beat's database scheduler says each time it saves the sweepers' last run.
_SCHEDULE_SAVED = "DatabaseScheduler: Schedule changed."


class MaintenanceTasksAtDebug(logging.Filter):
    """On Celery's beat and worker loggers: the INFO lines about a task of beat's schedule
    (beat sending it, a worker receiving it, its success, the scheduler saving its last
    run) become DEBUG lines, so the sweeper, due every few seconds, does not fill the console."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and (
            record.msg == _SCHEDULE_SAVED or _task_named(record) in _scheduled_tasks()
        ):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def _task_named(record: logging.LogRecord) -> str | None:
    args = record.args
    if isinstance(args, dict):  # the worker's "Task %(name)s[%(id)s] received/succeeded"
        return str(args.get("name"))
    if isinstance(args, tuple) and len(args) == 2:  # beat's "Sending due task %s (%s)"
        return str(args[1])
    return None


def _scheduled_tasks() -> set[str]:
    return {str(entry["task"]) for entry in getattr(settings, "CELERY_BEAT_SCHEDULE", {}).values()}
