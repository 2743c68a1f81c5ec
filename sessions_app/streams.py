"""Following a session's log: replay from the table, then live events, for any transport.

The NDJSON route and the WebSocket consumer both iterate a ``SessionFollower``
(or ``follow_events``); neither reads the log any other way. The follower:

1. joins its session's doorbell first (``sessions_app.doorbell``), so every append
   committed from now on rings it;
2. then reads the table from ``start_index`` in batches (the replay);
3. then waits, doing nothing, until a ring or the process's shared poll says the log
   has grown past what it has read, and reads the table again from the next index.

Events only ever come from the table, in index order, and the next index only
moves forward, so the seam between replay and live neither drops nor repeats an
event: an append committed before a read is in that read; one committed after it
rings a doorbell that the follower hears (it joined before the first read) or,
if the ring is lost (Redis pub/sub is at-most-once), the next shared poll finds
it. A lost ring only delays.

An idle follower costs nothing of its own: no task, no timer, no Redis connection
and no table read; the event loop's one doorbell listener and one poll serve all of
them. A follower made with ``heartbeat=True`` is also woken by the hub's one shared
beat while it waits, and ``batches`` then yields an empty batch (a heartbeat is due)
without reading the table. Iteration ends after a terminal session event (``session.completed`` /
``session.failed``). On exit or cancellation the follower leaves the doorbell. At
most one batch of events is held in memory: a slow reader simply reads the table
later.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any

from django.db import InterfaceError, OperationalError

from agent_platform.db import on_pool
from agents.events import TERMINAL_SESSION_EVENTS
from sessions_app import doorbell
from sessions_app.eventlog import ended_before, read_events
from sessions_app.models import Event

logger = logging.getLogger(__name__)
# Events read from the table at a time: the most a follower holds in memory.
READ_BATCH = 500


def _terminal_before(session_id: str, start_index: int) -> bool:
    """Whether the log already ended before ``start_index`` (nothing will ever follow)."""
    return ended_before(session_id, start_index)


_read_events = on_pool(read_events)
_read_terminal_before = on_pool(_terminal_before)


def record_json(event: Event) -> str:
    """An event as one compact JSON document, the same on every transport."""
    return json.dumps(event.as_record(), separators=(",", ":"))


class SessionFollower:
    """A session's events from ``start_index`` on: replay, then live, until the session ends.

    Example::

        async with SessionFollower(session_id, start_index) as follower:
            async for event in follower:
                ...  # index order, no gaps, no repeats; ends after session.completed

    ``head`` is the highest index known to exist (from reads and doorbells) and
    ``next_index`` the next one to yield, so ``head - next_index + 1`` events
    are waiting; ``caught_up`` turns true once a read has reached the end of the log.
    """

    __slots__ = ("_gate", "_read_head", "_started", "_watch", "batch", "caught_up", "next_index", "session_id")

    def __init__(
        self,
        session_id: str,
        start_index: int,
        *,
        batch: int | None = None,
        poll_interval: float | None = None,
        heartbeat: bool = False,
        gate: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    ) -> None:
        if start_index < 0:
            raise ValueError("start_index must be non-negative")
        self.session_id = session_id
        self.next_index = start_index
        self.caught_up = False
        self.batch = batch if batch is not None else READ_BATCH
        self._read_head = start_index - 1
        # poll_interval: at most this many seconds before the shared poll checks this
        # session when no ring comes (default: PLATFORM["STREAM_POLL_SECONDS"]).
        # heartbeat: ``batches`` yields an empty batch every PLATFORM["STREAM_HEARTBEAT_SECONDS"]
        # while it waits for events.
        self._watch = doorbell.Watch(session_id, start_index, poll_interval=poll_interval, heartbeat=heartbeat)
        self._started = False
        # gate: what each read of the table waits for first (a web process's running slots:
        # a stream's reads take turns with requests, tenant by tenant).
        self._gate = gate or contextlib.nullcontext

    @property
    def head(self) -> int:
        return max(self._read_head, self._watch.head)

    async def __aenter__(self) -> SessionFollower:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def start(self) -> None:
        """Join the session's doorbell (before any read). Without Redis the follower
        still works, by the shared poll."""
        if self._started:
            return
        self._started = True
        try:
            await self._watch.start()
        except BaseException:
            self._watch.stop()
            raise

    async def close(self) -> None:
        """Leave the doorbell; safe to call more than once."""
        self._watch.stop()

    async def _read(self) -> list[Event] | None:
        """The next batch from the table; None while the database is unreachable."""
        try:
            async with self._gate():
                return await _read_events(self.session_id, self.next_index, self.batch)
        except (OperationalError, InterfaceError) as error:
            logger.warning("stream of %s cannot read the log yet: %s", self.session_id, error)
            return None

    async def _ended_before_start(self) -> bool:
        if self.next_index == 0:
            return False
        try:
            async with self._gate():
                return await _read_terminal_before(self.session_id, self.next_index)
        except (OperationalError, InterfaceError):
            return False

    async def _events(self) -> AsyncIterator[Event]:
        async for batch in self.batches():
            batch.reverse()
            while batch:
                yield batch.pop()  # no loop variable: an idle stream keeps no event while it waits

    def _accept(self, events: list[Event]) -> tuple[list[Event], bool, bool]:
        """The events of a read that continue the log from ``next_index``; whether the
        last of them ends the session; whether the read had a gap (it cannot, with a
        gapless log: wait, then read again)."""
        fresh: list[Event] = []
        for index in range(len(events)):
            if events[index].index != self.next_index:
                return fresh, False, True
            self.next_index += 1
            self._read_head = max(self._read_head, events[index].index)
            fresh.append(events[index])
            if events[index].type in TERMINAL_SESSION_EVENTS:
                return fresh, True, False
        return fresh, False, False

    async def batches(self) -> AsyncIterator[list[Event]]:
        """The same events, a table read at a time, for transports that send several
        events in one write. Never empty, except for a follower made with
        ``heartbeat=True``: an empty batch says it has waited a heartbeat's time."""
        try:
            await self.start()
            first = True
            while True:
                # Clear before reading: the doorbell of anything committed after
                # this read's snapshot arrives after this point and ends the wait.
                self._watch.clear()
                events = await self._read()
                # Only a first read that finds nothing asks whether the log ended before
                # start_index (then nothing will ever follow): events found there mean it did not.
                if first and not events and await self._ended_before_start():
                    return
                first = False
                read = None if events is None else len(events)
                fresh, ended, gap = self._accept(events or [])
                events = None  # an idle stream keeps no events while it waits
                if fresh:
                    yield fresh
                    fresh = []
                if ended:
                    return
                if not gap:
                    if read == self.batch:
                        continue  # the table has more right now
                    if read is not None:
                        self.caught_up = True
                    if read and self.head >= self.next_index:
                        continue  # a doorbell announced more than that read saw
                # Until a ring or the shared poll announces more than has been read.
                self._watch.next_index = self.next_index
                await self._watch.wait()
                while self._watch.beaten():
                    yield []  # a heartbeat; the log has not grown, so no read
                    await self._watch.wait()
        finally:
            await self.close()


async def follow_events(session_id: str, start_index: int) -> AsyncIterator[Event]:
    """A session's events from ``start_index`` on; see ``SessionFollower``.

    Leaves the session's doorbell when the iteration ends, is closed or is cancelled.
    """
    async with SessionFollower(session_id, start_index) as follower:
        async for event in follower:
            yield event
