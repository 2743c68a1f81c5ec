"""Following a session's log: replay from the table, then live events, for any transport.

The NDJSON route and the WebSocket consumer both iterate a ``SessionFollower``
(or ``follow_events``); neither reads the log any other way. The follower:

1. joins the session's channel-layer group first, on a channel of its own, so
   every append committed from now on rings its doorbell;
2. then reads the table from ``start_index`` in batches (the replay);
3. then waits for a doorbell, or at most ``poll_interval`` seconds, and reads the
   table again from the next index.

Events only ever come from the table, in index order, and the next index only
moves forward, so the seam between replay and live neither drops nor repeats an
event: an append committed before a read is in that read; one committed after it
rings a doorbell that the follower hears (it joined before the first read) or,
if the doorbell is lost (the channel layer is at-most-once), the next poll finds
it. A lost doorbell only delays.

Iteration ends after a terminal session event (``session.completed`` /
``session.failed``). On exit or cancellation the follower leaves the group. At
most one batch of events is held in memory: a slow reader simply reads the
table later.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.db import InterfaceError, OperationalError, close_old_connections

from agent_platform.conf import platform_settings
from agents.events import TERMINAL_SESSION_EVENTS
from sessions_app.eventlog import ended_before, read_events, session_group, streams_served_on
from sessions_app.models import Event

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

# Events read from the table at a time: the most a follower holds in memory.
READ_BATCH = 500
DOORBELL = "event.appended"
# Seconds to wait for the doorbell listener to stop when the follower closes.
CLOSE_TIMEOUT = 2.0


def _terminal_before(session_id: str, start_index: int) -> bool:
    """Whether the log already ended before ``start_index`` (nothing will ever follow)."""
    return ended_before(session_id, start_index)


def on_pool(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``func`` run on the event loop's shared thread pool, not one thread per stream.

    Like channels' ``database_sync_to_async``, the worker thread's database
    connection is given back per ``CONN_MAX_AGE`` (or when broken) before and
    after each call, so however many streams are open they hold at most one
    connection per pool thread. (Django's own ``close_old_connections`` is
    called rather than channels', which its test communicators stub out.)
    """

    @functools.wraps(func)
    def closing(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()
        try:
            return func(*args, **kwargs)
        finally:
            close_old_connections()

    return sync_to_async(closing, thread_sensitive=False)


_read_events = on_pool(read_events)
_read_terminal_before = on_pool(_terminal_before)


_listening_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


async def _keep_receiver_listening(layer: Any) -> None:
    """channels_redis's pub/sub receiver naps 100 ms at a time while its connection has
    no subscription, so a stream opened on a server with no other stream open would hear
    its first doorbells up to 100 ms late. One channel per event loop, never left, keeps
    the receiver listening. (The in-memory layer needs to know this loop instead.)"""
    loop = asyncio.get_running_loop()
    if isinstance(layer, InMemoryChannelLayer):
        streams_served_on(loop)
    if not isinstance(layer, RedisPubSubChannelLayer) or loop in _listening_loops:
        return
    _listening_loops.add(loop)
    await layer.new_channel()


def record_json(event: Event) -> str:
    """An event as one compact JSON document, the same on every transport."""
    return json.dumps(event.as_record(), separators=(",", ":"))


def _raise_if_cancelled() -> None:
    """Re-raise a cancellation that a library swallowed.

    Cancelling a task while redis-py opens its first pub/sub connection can be
    lost inside ``subscribe()``; a stream that ignored it would never end.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


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

    def __init__(
        self,
        session_id: str,
        start_index: int,
        *,
        batch: int | None = None,
        poll_interval: float | None = None,
    ) -> None:
        if start_index < 0:
            raise ValueError("start_index must be non-negative")
        self.session_id = session_id
        self.next_index = start_index
        self.head = start_index - 1
        self.caught_up = False
        self.batch = batch if batch is not None else READ_BATCH
        # Seconds between reads of the table when no doorbell rings.
        self.poll_interval = poll_interval if poll_interval is not None else platform_settings.STREAM_POLL_SECONDS
        self._wake = asyncio.Event()
        self._layer: Any = None
        self._channel: str | None = None
        self._listener: asyncio.Task[None] | None = None
        self._started = False
        self._closed = False

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
        """Join the session's group (before any read). Without a working channel
        layer the follower still works, by polling alone."""
        if self._started:
            return
        self._started = True
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            await _keep_receiver_listening(layer)
            channel = await layer.new_channel()
            self._layer, self._channel = layer, channel
            await layer.group_add(session_group(self.session_id), channel)
        except Exception:
            logger.warning("stream of %s follows by polling only", self.session_id, exc_info=True)
            _raise_if_cancelled()
            return
        _raise_if_cancelled()
        self._listener = asyncio.create_task(self._listen(layer, channel))

    async def close(self) -> None:
        """Leave the group and stop listening; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.wait([self._listener], timeout=CLOSE_TIMEOUT)
        if self._layer is not None and self._channel is not None:
            try:
                await self._layer.group_discard(session_group(self.session_id), self._channel)
            except Exception:
                logger.warning("could not leave the group of %s", self.session_id, exc_info=True)

    async def _listen(self, layer: Any, channel: str) -> None:
        """Turn doorbells into wake-ups. One long-lived receive: cancelling a
        receive would drop the channel's subscription on some layers."""
        while True:
            try:
                message = await layer.receive(channel)
            except Exception:
                logger.warning("doorbell of %s unavailable; polling", self.session_id, exc_info=True)
                await asyncio.sleep(self.poll_interval)
                continue
            finally:
                _raise_if_cancelled()
            if message.get("type") != DOORBELL:
                continue
            index = message.get("index")
            if isinstance(index, int) and index > self.head:
                self.head = index
            self._wake.set()

    async def _read(self) -> list[Event] | None:
        """The next batch from the table; None while the database is unreachable."""
        try:
            return await _read_events(self.session_id, self.next_index, self.batch)
        except (OperationalError, InterfaceError) as error:
            logger.warning("stream of %s cannot read the log yet: %s", self.session_id, error)
            return None

    async def _ended_before_start(self) -> bool:
        if self.next_index == 0:
            return False
        try:
            return await _read_terminal_before(self.session_id, self.next_index)
        except (OperationalError, InterfaceError):
            return False

    async def _wait(self) -> None:
        """Until a doorbell rings or the poll interval passes."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.poll_interval):
                await self._wake.wait()

    async def _events(self) -> AsyncIterator[Event]:
        async for batch in self.batches():
            for event in batch:
                yield event

    async def batches(self) -> AsyncIterator[list[Event]]:
        """The same events, a table read at a time (never empty), for transports
        that send several events in one write."""
        try:
            await self.start()
            if await self._ended_before_start():
                return  # the log ended before start_index: nothing will ever follow
            while True:
                # Clear before reading: the doorbell of anything committed after
                # this read's snapshot arrives after this point and ends the wait.
                self._wake.clear()
                events = await self._read()
                fresh: list[Event] = []
                for event in events or ():
                    if event.index != self.next_index:
                        break  # cannot happen with a gapless log; wait, then re-read
                    self.next_index = event.index + 1
                    self.head = max(self.head, event.index)
                    fresh.append(event)
                    if event.type in TERMINAL_SESSION_EVENTS:
                        yield fresh
                        return
                else:
                    if fresh:
                        yield fresh
                    if events is not None and len(events) == self.batch:
                        continue  # the table has more right now
                    if events is not None:
                        self.caught_up = True
                    if events and self.head >= self.next_index:
                        continue  # a doorbell announced more than that read saw
                    events, fresh = None, []  # an idle stream keeps no events while it waits
                    await self._wait()
                    continue
                if fresh:
                    yield fresh
                events, fresh = None, []
                await self._wait()
        finally:
            await self.close()


async def follow_events(session_id: str, start_index: int) -> AsyncIterator[Event]:
    """A session's events from ``start_index`` on; see ``SessionFollower``.

    Leaves the session's group when the iteration ends, is closed or is cancelled.
    """
    async with SessionFollower(session_id, start_index) as follower:
        async for event in follower:
            yield event
