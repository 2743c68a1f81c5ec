"""One asyncio event loop per worker process, where all of the process's turns run.

Turns are I/O-bound (a model call takes seconds), so one process runs many of them:
the worker has ``PLATFORM["TURN_CONCURRENCY"]`` task threads (Celery's threads pool,
from settings), and each ``run_queued_turn`` task hands its turn to this loop and
waits for it to end. The task stays a Celery task as before (acked late, retried,
redelivered when the worker is lost); only the waiting is cheap.

Database work for turns goes to a small thread pool of its own
(``PLATFORM["WORKER_DB_THREADS"]``): however many turns run, the process holds at most
that many connections for them, and a turn waiting on its model holds none. Each call
borrows a connection and gives it back (the pool keeps them open). While the threads are
all busy, tenants' calls take turns (``fair_slots``): one tenant's many turns do not
queue in front of another's one.

The loop also keeps every running turn's lease fresh and watches their cancel flags,
with one query for all of them (not one per turn), and counts the turns it runs per
tenant (for the fair share, ``sessions_app.scheduling``).

A prefork child gets a loop of its own on first use (the parent's thread does not
survive a fork).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from agent_platform import rls
from agent_platform.conf import platform_settings
from agent_platform.request_ids import current_request_id, request_id
from sessions_app.fair_slots import FairSlots
from sessions_app.models import Turn
from sessions_app.scheduling import lease

logger = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

# How often the running turns' cancel flags are read (seconds): a stop or a preempt
# takes effect within this.
CANCEL_POLL_SECONDS = 0.25

# The tenant whose turn the current asyncio task runs (None before it is known): whose
# turn a database call is for, so the database threads go to tenants in turn.
turn_tenant: contextvars.ContextVar[int | None] = contextvars.ContextVar("turn_tenant", default=None)


@dataclass
class _Running:
    tenant_id: int
    cancel: Callable[[], None]
    abandon: Callable[[], None]
    renewed_at: float


class LeaseLost(Exception):
    """The turn's lease could not be renewed for most of its length (the database was
    away), so another worker may take the turn up: this attempt stopped, recording
    nothing more, and the turn is taken up again from its log."""


def _borrowing_a_connection(caller_request_id: str, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``func`` with this thread's database connection given back before and after
    (to the pool; or closed when broken), like Django does around a request; under the
    caller's request id (what it logs, and the tasks it sends, such as hook dispatch)."""
    close_old_connections()
    try:
        with request_id(caller_request_id):
            return func(*args, **kwargs)
    finally:
        close_old_connections()


class TurnLoop:
    """The process's turn loop; see the module docstring. Use ``turn_loop()``."""

    def __init__(self, db_threads: int, tool_threads: int) -> None:
        self.loop = asyncio.new_event_loop()
        # Plain functions of authored tools and file writes run on the loop's default
        # executor; the database has its own, so a slow tool never holds up a write.
        self.loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(tool_threads, thread_name_prefix="turn-tools")
        )
        self._db = concurrent.futures.ThreadPoolExecutor(db_threads, thread_name_prefix="turn-db")
        # As many slots as threads: the calls wait here, fairly between tenants, rather
        # than in the executor's queue, in arrival order.
        self._db_slots = FairSlots(db_threads, platform_settings.TURN_TENANT_SHARE)
        self._running: dict[str, _Running] = {}
        self._thread = threading.Thread(target=self._serve, name="turn-loop", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.create_task(self._watch_running_turns())
        self.loop.run_forever()

    # --- for the task threads -----------------------------------------------------------

    def run(self, coroutine: Coroutine[Any, Any, T], on_abandon: Callable[[], None] | None = None) -> T:
        """Run ``coroutine`` on the loop and wait for its result (from a task thread).

        If the waiting thread is interrupted (a terminating worker raises SystemExit in
        it, or a time limit), ``on_abandon`` runs on the loop and the coroutine is
        cancelled: the turn is taken up again from its log by another attempt.
        """
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                if on_abandon is not None:
                    self.loop.call_soon_threadsafe(on_abandon)
                future.cancel()
            raise

    # --- for the turns ------------------------------------------------------------------

    async def db(self, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``func(*args, **kwargs)`` on a database thread, awaited; while the threads are
        all busy, the tenants' calls take turns (``turn_tenant``)."""
        # An executor does not carry the context: the call sees the caller's rows.
        call = rls.call_in_scope(
            functools.partial(_borrowing_a_connection, current_request_id(), func, *args, **kwargs)
        )
        async with self._db_slots.slot(turn_tenant.get()):
            return await self.loop.run_in_executor(self._db, call)

    @contextmanager
    def running(
        self, turn_id: str, tenant_id: int, cancel: Callable[[], None], abandon: Callable[[], None]
    ) -> Iterator[None]:
        """While inside: the turn's lease is renewed; ``cancel`` is called (once) when its
        cancel flag is set or its row is gone, and ``abandon`` when its lease could not be
        renewed for two thirds of its length. Call on the loop."""
        self._running[turn_id] = _Running(tenant_id, cancel, abandon, self.loop.time())
        try:
            yield
        finally:
            self._running.pop(turn_id, None)

    def running_for(self, tenant_id: int) -> int:
        """How many turns of the tenant run in this process (any thread may ask)."""
        return Counter(entry.tenant_id for entry in list(self._running.values()))[tenant_id]

    @property
    def running_count(self) -> int:
        return len(self._running)

    # --- leases and cancel flags, for all running turns at once ----------------------------

    async def _watch_running_turns(self) -> None:
        rls.enter_platform()  # this process's turns, whoever's they are
        lease_seconds = platform_settings.TURN_LEASE_SECONDS
        renew_every = max(lease_seconds / 3, CANCEL_POLL_SECONDS)
        last_renewal = self.loop.time()
        while True:
            await asyncio.sleep(CANCEL_POLL_SECONDS)
            if not self._running:
                continue
            ids = list(self._running)
            try:
                if self.loop.time() - last_renewal >= renew_every:
                    await self.db(_renew_leases, ids)
                    last_renewal = renewed = self.loop.time()
                    for turn_id in ids:
                        if turn_id in self._running:
                            self._running[turn_id].renewed_at = renewed
                to_cancel = await self.db(_cancelled_among, ids)
            except DatabaseError:
                # The database is away: the turns find out themselves at their next write.
                logger.warning("cannot renew the running turns' leases or read their cancel flags", exc_info=True)
                to_cancel = []
            for turn_id in to_cancel:
                entry = self._running.pop(turn_id, None)
                if entry is not None:
                    entry.cancel()
            # A lease about to run out may be taken up by another worker: never run a turn
            # beside a second attempt of itself.
            stale = [
                turn_id
                for turn_id, entry in self._running.items()
                if self.loop.time() - entry.renewed_at > lease_seconds * 2 / 3
            ]
            for turn_id in stale:
                self._running.pop(turn_id).abandon()


def _renew_leases(turn_ids: list[str]) -> None:
    Turn.objects.filter(pk__in=turn_ids).update(lease_until=timezone.now() + lease())


def _cancelled_among(turn_ids: list[str]) -> list[str]:
    """The turns asked to stop, and those whose row is gone."""
    found = dict(Turn.objects.filter(pk__in=turn_ids).values_list("pk", "cancel_requested"))
    return [turn_id for turn_id in turn_ids if found.get(turn_id, True)]


_loop: TurnLoop | None = None
_loop_pid = 0
_loop_lock = threading.Lock()


def turn_loop() -> TurnLoop:
    """This process's turn loop, started on first use (again in a forked child)."""
    global _loop, _loop_pid  # one loop per process
    with _loop_lock:
        if _loop is None or _loop_pid != os.getpid():
            _loop = TurnLoop(
                db_threads=platform_settings.WORKER_DB_THREADS, tool_threads=platform_settings.TURN_CONCURRENCY
            )
            _loop_pid = os.getpid()
        return _loop
