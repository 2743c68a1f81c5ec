"""The runtime's events, appended durably to the session's log, in batches.

Appending one event is one transaction (a round trip to reserve indexes, one to
insert, one to commit) and one doorbell; a turn emits several events within a
millisecond. So the sink writes them as a group commit: a writer task appends
everything emitted so far in one transaction, and what is emitted meanwhile goes
into the next one.

Events that only report the model's progress (``PROGRESS``) do not wait for
their write: the runtime goes on while the writer works. Nor does the writer hurry
for them: it waits up to ``LINGER_SECONDS`` for more events to join the write (a
reply's end and its step's end come a moment apart), and writes at once when the
runtime waits for an event. Each write is a transaction, a doorbell and a read by
every stream following the session.

Every other event (tool calls about to run, results, approvals, subagents, the end
of the turn) waits until it and everything before it is durable, so nothing the
platform acts on, and no terminal event, is ahead of the log. So does the first
delta of a reply: readers see the reply start at once, and the writer is not left
waiting for the interpreter lock while the model streams (a model that streams
without awaiting, like the test model's /stream, would hold it for up to 5 ms at a
time). A worker that dies loses at most progress events that no reader has seen
yet; indexes are given at commit, so the log stays gapless either way.

In a worker the end of the turn (``turn.completed`` or ``turn.failed``) is held, not
written (``hold_turn_end``): the worker writes it in the transaction that records the
turn and settles its session (``sessions_app.turn_worker``), so a reader is woken once
for the end, not twice. Nothing acts on the end before that commit; a worker that dies
before it leaves a turn that is taken up again from its log and ends then. A test-model
turn is two writes this way (its first events with the reply's first delta; the
reply's end and the turn's with the settling), where it was five or six. Events still
waiting for the writer when the end comes go with the end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async as in_thread

from agent_platform.crash import crash_point
from agents.events import DELTAS, PROGRESS, TURN_ENDS, EventType
from sessions_app.eventlog import Fence, NewEvent, append_events

DatabaseCaller = Callable[..., Awaitable[Any]]

# How long the writer waits for more events to join a write of progress events only:
# far below what a reader notices, far above the gaps between a turn's first events.
LINGER_SECONDS = 0.002


async def _in_thread(func: Callable[..., Any], *args: Any) -> Any:
    return await in_thread(func)(*args)


class DatabaseSink:
    """An ``EventSink`` over the session's log (one per turn, used from one event loop)."""

    def __init__(
        self,
        session_id: str,
        db: DatabaseCaller | None = None,
        fence: Fence | None = None,
        hold_turn_end: bool = False,
    ) -> None:
        self.session_id = session_id
        # Written only while this attempt at the turn is its current one.
        self.fence = fence
        # How a write reaches the database from the event loop: the turn loop's database
        # threads in a worker; elsewhere (tests, tools) channels' thread.
        self._db: DatabaseCaller = db or _in_thread
        # Set when the worker goes away mid-turn (Celery terminating it, a time limit):
        # what the cancelled runtime says then ("turn interrupted") is not recorded,
        # because the turn is not over; it is taken up again from its log.
        self.closed = False
        # The turn's end and anything after it, for the caller to write (see the module docstring).
        self.hold_turn_end = hold_turn_end
        self.held: list[NewEvent] = []
        self._pending: list[NewEvent] = []
        self._writer: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        # Set while the runtime waits for the log (``drain``): the writer lingers no more.
        self._hurry = asyncio.Event()
        self._last_type: EventType | None = None

    async def emit(self, type: EventType, data: dict[str, Any], turn_id: str | None) -> None:
        """Queue the event for the writer; unless it is progress, wait until it is durable.

        Raises:
            Exception: what a write raised (that write and every later one are not made).
        """
        if self.closed:
            return
        self._raise_failure()
        if self.held or (self.hold_turn_end and type in TURN_ENDS):
            # What waits for the writer goes with the end (one write fewer); a write in
            # flight is drained before the end is written, so the order holds.
            self.held += [*self._pending, NewEvent(type, data, turn_id)]
            self._pending = []
            return
        self._pending.append(NewEvent(type, data, turn_id))
        starts_reply = type in DELTAS and type != self._last_type
        self._last_type = type
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())
        if type not in PROGRESS or starts_reply:
            await self.drain()
        else:
            # One turn of the event loop, so the writer moves on even when the model
            # streams without ever awaiting (as the test model's /stream does).
            await asyncio.sleep(0)

    async def drain(self) -> None:
        """Until every event emitted so far is in the log.

        Raises:
            Exception: what a write raised.
        """
        self._hurry.set()
        while self._writer is not None and not self._writer.done():
            # Shielded: a turn cancelled while it waits must not cancel the write itself.
            await asyncio.shield(self._writer)
        self._raise_failure()

    async def _write(self) -> None:
        try:
            while self._pending:
                if not self._hurry.is_set():
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(LINGER_SECONDS):
                            await self._hurry.wait()
                batch, self._pending = self._pending, []
                if not batch:
                    break  # what was pending went with the turn's end (held)
                await self._db(append_events, self.session_id, batch, self.fence)
                for event in batch:
                    crash_point(f"after-{event.type}")  # fault tests: die with this event durable
        except Exception as failure:  # noqa: BLE001 - kept, and raised to the runtime by its next emit or drain
            self._failure = failure
            self._pending = []
        finally:
            self._hurry.clear()  # everything is written: the next write may linger again

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure
