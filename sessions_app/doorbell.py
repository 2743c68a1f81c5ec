"""The doorbell: the signal that a session's log has grown, rung after an append commits
and heard by the streams that follow the session.

A ring carries no event, only "the log of session S now reaches index N". Streams
always read the events themselves from the table (``sessions_app.streams``), so a
lost ring delays a stream and never loses, repeats or reorders anything.

Two forms, chosen by ``PLATFORM["DOORBELL_REDIS_URL"]``:

- distributed (a Redis URL, the default when ``REDIS_URL`` is set): ``ring`` is one
  ``PUBLISH event.appended:<session id> <N>``, from whichever process appended (web or
  worker). Each serving event loop has one ``Doorbells`` hub holding one Redis pub/sub
  connection for all its streams: it subscribes a session's channel when the first
  stream of that session starts, unsubscribes it once the last one has gone (at the
  hub's next poll), and wakes the streams of the session each message names.
- embedded (empty): appends run on worker threads of the serving process, and
  ``ring`` hands the signal to each hub's event loop with ``call_soon_threadsafe``.

Redis pub/sub is at-most-once: a message published while the hub is disconnected is
gone. So each hub also runs one shared poll: every ``STREAM_POLL_SECONDS`` (or sooner
if a stream asked for a shorter interval) it reads ``Session.next_event_index`` of all
the sessions it follows in one query and wakes only the streams that have not read
that far. An idle stream costs no work of its own. While Redis is down the streams go
on by that poll; the hub reconnects with backoff, subscribes again to everything, and
polls at once when the subscriptions are back (RELIABILITY.md row 4).

Streams that asked for heartbeats (``Watch(heartbeat=True)``) are woken by one shared
beat of the hub every ``STREAM_HEARTBEAT_SECONDS`` while they wait, and tell their
client they are alive without reading the table: still no task or timer per stream.

A stream's seam (``Watch.start`` before the first read of the table) is exact: once
``start`` returns, the subscription is confirmed by Redis (or, if Redis is down or
slow to confirm, the poll covers the session), so every append committed after the
read either rings this stream or is found by the next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import redis
from django.db import InterfaceError, OperationalError, connection
from redis import asyncio as aioredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from agent_platform import rls
from agent_platform.conf import platform_settings
from agent_platform.db import on_pool
from agent_platform.serving import give_memory_back
from sessions_app.models import Session

logger = logging.getLogger(__name__)

# The one name of the signal: the prefix of its Redis channels, and what logs call it.
SIGNAL = "event.appended"
# Channels subscribed or unsubscribed per Redis command.
CHUNK = 1000
# Seconds a stream's start waits for Redis to confirm its session's subscription.
SUBSCRIBE_WAIT = 2.0
# Seconds after a failed PUBLISH during which rings are dropped (the poll covers
# them), so appenders are not held up by connection attempts to a Redis that is down.
RING_PAUSE = 1.0
# Seconds without a word from Redis before the hub pings it; twice that, and the
# connection is taken for dead and made again (a peer that vanished sends no reset).
KEEPALIVE = 30.0
# Once at least half of this many streams have closed, the memory they held goes back to
# the system (agent_platform.serving), this many seconds after the count fell that low.
GIVE_BACK_AFTER = 1000
GIVE_BACK_DELAY_SECONDS = 2.0
# Reconnection backoff bounds, seconds (with jitter, so many processes spread out).
RECONNECT_MIN, RECONNECT_MAX = 0.2, 5.0


def channel(session_id: str) -> str:
    """The Redis channel of a session's doorbell."""
    return f"{SIGNAL}:{session_id}"


_CHANNEL_PREFIX = channel("").encode()


# --- Ringing (sync, any thread, after the append's commit) ------------------------------------


class _Publisher:
    """A pooled sync client per URL; after a failure, rings are dropped for ``RING_PAUSE``."""

    def __init__(self, url: str) -> None:
        # One immediate retry: the first PUBLISH after a Redis restart meets a dead pooled
        # connection and should go out on a new one, not be dropped.
        self.client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1, retry=Retry(NoBackoff(), 1))
        self.paused_until = 0.0
        self.failing = False

    def publish(self, session_id: str, last_index: int) -> None:
        if time.monotonic() < self.paused_until:
            return
        try:
            self.client.publish(channel(session_id), last_index)
        except redis.RedisError as error:
            self.paused_until = time.monotonic() + RING_PAUSE
            if not self.failing:
                logger.warning("cannot ring the doorbell (%s); streams find new events by polling", error)
            self.failing = True
            return
        if self.failing:
            logger.info("the doorbell rings again")
        self.failing = False


_publishers: dict[str, _Publisher] = {}
_publishers_lock = threading.Lock()


def _publisher(url: str) -> _Publisher:
    with _publishers_lock:
        if url not in _publishers:
            _publishers[url] = _Publisher(url)
        return _publishers[url]


def ring(session_id: str, last_index: int) -> None:
    """Tell the streams of ``session_id`` that its log now reaches ``last_index``.

    Call it after the append has committed (``transaction.on_commit``). It never
    raises: a ring that cannot be delivered only delays the streams until the poll.
    """
    url = platform_settings.DOORBELL_REDIS_URL
    if url:
        _publisher(url).publish(session_id, last_index)
        return
    with _hubs_lock:
        hubs = list(_hubs.values())
    for hub in hubs:
        # Read from another thread: a stream registers before its first read of the table,
        # and this ring follows a commit that read did not see, so it sees the stream.
        if session_id in hub.watches:
            try:
                hub.loop.call_soon_threadsafe(hub.rung, session_id, last_index)
            except RuntimeError:  # that event loop is closed
                _forget(hub)


# --- Hearing (async, on the serving event loop) ------------------------------------------------


class Watch:
    """One stream's place at its session's doorbell.

    Example::

        watch = Watch(session_id)
        await watch.start()          # before the first read of the table
        try:
            while True:
                watch.clear()        # before each read
                ...                  # read from watch.next_index; then set watch.next_index
                await watch.wait()   # until a ring or the poll says there is more
        finally:
            watch.stop()

    ``next_index`` is the next index the stream needs (the poll wakes it when the log
    is longer than that); ``head`` is the highest index a ring announced.
    """

    __slots__ = (
        "_beat",
        "_hub",
        "_rung",
        "_rung_anywhere",
        "_waiter",
        "head",
        "heartbeat",
        "next_index",
        "poll_interval",
        "session_id",
    )

    def __init__(
        self, session_id: str, next_index: int = 0, *, poll_interval: float | None = None, heartbeat: bool = False
    ) -> None:
        self.session_id = session_id
        self.next_index = next_index
        self.head = next_index - 1
        # At most this many seconds between two checks of this stream's session by the
        # shared poll (None: STREAM_POLL_SECONDS).
        self.poll_interval = poll_interval
        # Whether the hub's shared beat wakes this watch while it waits (``beaten``).
        self.heartbeat = heartbeat
        self._beat = False
        # An asyncio.Event, made small: thousands of idle streams each hold one.
        self._rung = False
        # Whether a ring since ``clear`` named no index (look anyway).
        self._rung_anywhere = False
        self._waiter: asyncio.Future[None] | None = None
        self._hub: Doorbells | None = None

    async def start(self) -> None:
        """Join the doorbell of the running event loop; returns once rings will be heard."""
        if self._hub is None:
            self._hub = _hub_of_running_loop()
            await self._hub.add(self)

    def stop(self) -> None:
        """Leave the doorbell; safe to call more than once, and from a cancelled task."""
        hub, self._hub = self._hub, None
        if hub is not None:
            hub.remove(self)

    def clear(self) -> None:
        self._rung = self._rung_anywhere = False

    async def wait(self) -> None:
        """Until a ring, or the poll, announces an index at or past ``next_index``
        (at once if one did since ``clear``). A ring heard while the stream was reading,
        of events that read returned, does not count: ``next_index`` is past it now, and
        another read would find nothing (the worker's commit often rings mid-read)."""
        if self._rung and (self._rung_anywhere or self.head >= self.next_index):
            return
        self._rung = False
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def beat(self) -> None:
        """The hub's heartbeat: wakes the watch if it is waiting (a busy stream is sending anyway)."""
        if self._waiter is not None and not self._waiter.done():
            self._beat = True
            self._waiter.set_result(None)

    def beaten(self) -> bool:
        """Whether the last ``wait`` ended by a heartbeat alone (nothing new to read)."""
        beaten, self._beat = self._beat and not self._rung, False
        return beaten

    def ring(self, index: int | None) -> None:
        """The log reaches ``index`` (None: somewhere unknown, look anyway)."""
        if index is not None:
            self.head = max(self.head, index)
            if index < self.next_index:
                return  # already read
        else:
            self._rung_anywhere = True
        self._rung = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def followers(session_id: str) -> int:
    """How many streams of the running event loop follow ``session_id`` (for operators and tests)."""
    with _hubs_lock:
        hub = _hubs.get(asyncio.get_running_loop())
    return len(hub.watches.get(session_id, ())) if hub is not None else 0


@on_pool
def _next_indexes(session_ids: Sequence[str]) -> dict[str, int]:
    """``Session.next_event_index`` of each session, in one query (on SQLite, one per
    ``max_query_params`` ids). On Postgres the ids go as one array: ``IN`` with 10,000
    placeholders costs five times the CPU, holding the interpreter lock meanwhile.

    The poll is shared by every stream of the process, whoever's: it reads across tenants
    (``agent_platform.rls``), whichever stream's context the poll was started in."""
    with rls.platform_scope():
        return _read_next_indexes(session_ids)


def _read_next_indexes(session_ids: Sequence[str]) -> dict[str, int]:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # The table name is ours; the ids are one parameter.
            cursor.execute(
                f"SELECT id, next_event_index FROM {Session._meta.db_table} WHERE id = ANY(%s)",  # noqa: S608
                [list(session_ids)],
            )
            return dict(cursor.fetchall())
    size = connection.features.max_query_params or len(session_ids) or 1
    found: dict[str, int] = {}
    for start in range(0, len(session_ids), size):
        rows = Session.objects.filter(pk__in=session_ids[start : start + size]).values_list("pk", "next_event_index")
        found.update(rows)
    return found


def _raise_if_cancelled() -> None:
    """Re-raise a cancellation that redis-py swallowed: cancelling a task while redis-py
    connects can be lost inside it, and a listener that ignored it would never end."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


State = Literal["connecting", "up", "down"]


class Doorbells:
    """The doorbells of one event loop: every stream of the loop, one Redis pub/sub
    connection (distributed form) and one shared poll."""

    def __init__(self, loop: asyncio.AbstractEventLoop, url: str) -> None:
        self.loop = loop
        self.url = url
        self.watches: dict[str, set[Watch]] = {}
        self._intervals: Counter[float | None] = Counter()
        self._tasks: list[asyncio.Task[None]] = []
        self._poll_wanted = False
        self._poller_wake = asyncio.Event()
        # The Redis connection (distributed form only).
        self.state: State = "connecting"
        self._pubsub: Any = None
        self._subscribed: set[str] = set()  # confirmed on the current connection
        self._pending: dict[str, asyncio.Future[None]] = {}  # sent or queued, not yet confirmed
        self._to_subscribe: list[str] = []
        self._to_unsubscribe: list[str] = []
        self._ping_wanted = False
        self._writer_wake = asyncio.Event()
        self._last_heard = 0.0
        # Streams followed now, the most since memory was last given back, and whether
        # giving it back is due (see ``_count``).
        self._followed = 0
        self._peak = 0
        self._giving_back: asyncio.TimerHandle | None = None
        # The shared heartbeat, started with the first stream that wants one.
        self._beater: asyncio.Task[None] | None = None

    # --- streams come and go

    async def add(self, watch: Watch) -> None:
        if not self._tasks:
            self._start_tasks()
        followers = self.watches.setdefault(watch.session_id, set())
        followers.add(watch)
        self._count(+1)
        if watch.heartbeat and self._beater is None:
            self._beater = self.loop.create_task(
                self._beat_forever(), name="doorbell-beat", context=contextvars.Context()
            )
            self._tasks.append(self._beater)
        self._intervals[watch.poll_interval] += 1
        if watch.poll_interval is not None and watch.poll_interval < self._interval(without=watch.poll_interval):
            self._poller_wake.set()  # the poll looks sooner from now on
        if self.url:
            await self._subscription(watch.session_id)

    def remove(self, watch: Watch) -> None:
        followers = self.watches.get(watch.session_id)
        if followers is None or watch not in followers:
            return
        followers.discard(watch)
        self._count(-1)
        if not followers:
            # Its channel is unsubscribed at the next poll: a stream that reconnects at
            # once finds the subscription still there.
            del self.watches[watch.session_id]
        self._intervals[watch.poll_interval] -= 1
        if not self._intervals[watch.poll_interval]:
            del self._intervals[watch.poll_interval]

    def _count(self, change: int) -> None:
        """Once at least half of many streams (``GIVE_BACK_AFTER``) have closed, give the
        memory they held back to the system, a moment later (the rest may be closing too)."""
        self._followed += change
        self._peak = max(self._peak, self._followed)
        if self._peak >= GIVE_BACK_AFTER and self._followed <= self._peak // 2 and self._giving_back is None:
            self._giving_back = self.loop.call_later(GIVE_BACK_DELAY_SECONDS, self._give_back)

    def _give_back(self) -> None:
        self._giving_back = None
        give_memory_back()
        self._peak = self._followed

    async def _subscription(self, session_id: str) -> None:
        """Until Redis has confirmed the session's subscription (or cannot, for now)."""
        if session_id in self._subscribed:
            return
        pending = self._pending.get(session_id)
        if pending is None:
            if self.state == "down":
                return  # the poll covers it; it is subscribed again on reconnection
            pending = self._pending[session_id] = self.loop.create_future()
            if self.state == "up":
                self._to_subscribe.append(session_id)
                self._writer_wake.set()
        try:
            async with asyncio.timeout(SUBSCRIBE_WAIT):
                await asyncio.shield(pending)
        except TimeoutError:
            logger.info("Redis is slow to confirm the doorbell of %s; the poll covers it", session_id)

    def rung(self, session_id: str, index: int | None) -> None:
        for watch in self.watches.get(session_id, ()):
            watch.ring(index)

    # --- the shared poll

    def _interval(self, without: float | None = None) -> float:
        default = float(platform_settings.STREAM_POLL_SECONDS)
        asked = [value for value in self._intervals if value is not None and value != without]
        return min([default, *asked])

    def poll_soon(self) -> None:
        self._poll_wanted = True
        self._poller_wake.set()

    async def _poll_forever(self) -> None:
        last = self.loop.time()
        try:
            while True:
                due = last + self._interval()
                if not self._poll_wanted and self.loop.time() < due:
                    self._poller_wake.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(max(0.0, due - self.loop.time())):
                            await self._poller_wake.wait()
                    continue  # woken early: re-time (a shorter interval) or poll now
                self._poll_wanted = False
                last = self.loop.time()
                try:
                    await self.poll()
                except (OperationalError, InterfaceError) as error:
                    logger.info("the streams' poll cannot read the database yet: %s", error)
                except Exception:
                    # The poll is every stream's safety net: log, and poll again next time.
                    logger.exception("the streams' poll failed")
        finally:
            _forget(self)

    async def poll(self) -> None:
        """One check of every followed session; wakes the streams behind their log."""
        if self.url:
            self._unsubscribe_unfollowed()
            self._keep_alive()
        if not self.watches:
            return
        lengths = await _next_indexes(list(self.watches))
        for session_id, length in lengths.items():
            for watch in self.watches.get(session_id, ()):
                if length > watch.next_index:
                    watch.ring(length - 1)

    # --- the shared heartbeat

    async def _beat_forever(self) -> None:
        """Every ``STREAM_HEARTBEAT_SECONDS``, wake each waiting stream that wants heartbeats:
        one timer for the whole loop, and no table read (``Watch.beaten``)."""
        while True:
            await asyncio.sleep(float(platform_settings.STREAM_HEARTBEAT_SECONDS))
            for followers in self.watches.values():
                for watch in followers:
                    if watch.heartbeat:
                        watch.beat()  # resolves a future: nothing runs until this loop is done

    # --- the Redis connection (distributed form)

    def _unsubscribe_unfollowed(self) -> None:
        gone = [session_id for session_id in self._subscribed if session_id not in self.watches]
        if gone and self.state == "up":
            self._subscribed.difference_update(gone)
            self._to_unsubscribe += gone
            self._writer_wake.set()

    def _keep_alive(self) -> None:
        if self.state == "up" and self.loop.time() - self._last_heard > KEEPALIVE:
            self._ping_wanted = True
            self._writer_wake.set()

    async def _listen_forever(self) -> None:
        backoff = RECONNECT_MIN
        while True:
            client = aioredis.Redis.from_url(
                self.url,
                socket_connect_timeout=2,
                socket_timeout=5,
                socket_keepalive=True,
                retry=AsyncRetry(NoBackoff(), 0),  # this loop reconnects, after its backoff
                client_name=f"doorbell-{os.getpid()}",
            )
            pubsub = client.pubsub()
            try:
                await pubsub.connect()
                _raise_if_cancelled()
                backoff = RECONNECT_MIN
                await self._connected(pubsub)
            except (redis.RedisError, OSError) as error:
                if self.state != "down":
                    logger.warning(
                        "the doorbell lost Redis (%s); streams find new events by polling until it is back", error
                    )
            except Exception:
                logger.exception("the doorbell's Redis listener failed; it starts again")
            finally:
                self._disconnected()
                with contextlib.suppress(redis.RedisError, OSError):
                    await pubsub.aclose()
                    await client.aclose()
                _raise_if_cancelled()
            await asyncio.sleep(backoff * random.uniform(0.5, 1.0))  # noqa: S311 - jitter, not secrecy
            backoff = min(backoff * 2, RECONNECT_MAX)

    async def _connected(self, pubsub: Any) -> None:
        """Subscribe everything followed, then hear rings until the connection fails."""
        was_down = self.state == "down"
        self._pubsub, self.state, self._last_heard = pubsub, "up", self.loop.time()
        for session_id in self.watches:
            self._pending.setdefault(session_id, self.loop.create_future())
        self._to_subscribe = list(self._pending)
        self._writer_wake.set()
        if was_down:
            logger.info("the doorbell hears Redis again")
        # Rings published while nobody listened are gone: poll once the subscriptions are in.
        waited = asyncio.gather(*(asyncio.shield(future) for future in self._pending.values()))
        reader = asyncio.ensure_future(self._read(pubsub))
        writer = asyncio.ensure_future(self._write(pubsub))
        catch_up = asyncio.ensure_future(self._poll_when_subscribed(waited))
        try:
            done, _ = await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, writer, catch_up):
                task.cancel()
            await asyncio.gather(reader, writer, catch_up, return_exceptions=True)
        for task in done:
            task.result()  # the reader's or the writer's error
        raise redis.ConnectionError("the doorbell's connection ended")

    async def _poll_when_subscribed(self, subscribed: asyncio.Future[Any]) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SUBSCRIBE_WAIT * 5):
                await subscribed
        self.poll_soon()

    def _disconnected(self) -> None:
        if self.state == "up" or self.state == "connecting":
            self.state = "down"
        self._pubsub = None
        self._subscribed.clear()
        self._to_subscribe.clear()
        self._to_unsubscribe.clear()
        for future in self._pending.values():
            if not future.done():
                future.set_result(None)  # the stream goes on by the poll
        self._pending.clear()

    async def _read(self, pubsub: Any) -> None:
        while True:
            message = await pubsub.get_message(timeout=KEEPALIVE)
            _raise_if_cancelled()
            now = self.loop.time()
            if message is None:
                if now - self._last_heard > 2 * KEEPALIVE:
                    raise redis.ConnectionError("Redis did not answer a ping")
                continue
            self._last_heard = now
            kind, name = message["type"], message["channel"]
            if not isinstance(name, bytes) or not name.startswith(_CHANNEL_PREFIX):
                continue  # a pong
            session_id = name[len(_CHANNEL_PREFIX) :].decode()
            if kind == "message":
                try:
                    index: int | None = int(message["data"])
                except (TypeError, ValueError):
                    index = None
                self.rung(session_id, index)
            elif kind == "subscribe":
                self._subscribed.add(session_id)
                future = self._pending.pop(session_id, None)
                if future is not None and not future.done():
                    future.set_result(None)

    async def _write(self, pubsub: Any) -> None:
        while True:
            await self._writer_wake.wait()
            self._writer_wake.clear()
            # Unsubscriptions first: a session dropped and then followed again ends subscribed.
            gone, self._to_unsubscribe = self._to_unsubscribe, []
            for chunk in _chunks(gone):
                await pubsub.unsubscribe(*(channel(session_id) for session_id in chunk))
                _raise_if_cancelled()
            wanted, self._to_subscribe = self._to_subscribe, []
            for chunk in _chunks(wanted):
                await pubsub.subscribe(*(channel(session_id) for session_id in chunk))
                _raise_if_cancelled()
            if self._ping_wanted:
                self._ping_wanted = False
                await pubsub.ping()
                _raise_if_cancelled()

    def _start_tasks(self) -> None:
        # A context of their own: these tasks outlive the request whose stream made them.
        context = contextvars.Context()
        self._tasks.append(self.loop.create_task(self._poll_forever(), name="doorbell-poll", context=context))
        if self.url:
            listener = self.loop.create_task(self._listen_forever(), name="doorbell-listen", context=context)
            self._tasks.append(listener)


_hubs: dict[asyncio.AbstractEventLoop, Doorbells] = {}
_hubs_lock = threading.Lock()


def _hub_of_running_loop() -> Doorbells:
    loop = asyncio.get_running_loop()
    with _hubs_lock:
        hub = _hubs.get(loop)
        if hub is None:
            hub = _hubs[loop] = Doorbells(loop, platform_settings.DOORBELL_REDIS_URL)
        return hub


def _forget(hub: Doorbells) -> None:
    """Drop a hub whose loop is closing (its tasks were cancelled) or closed."""
    with _hubs_lock:
        if _hubs.get(hub.loop) is hub:
            del _hubs[hub.loop]
    for task in hub._tasks:
        task.cancel()
