"""The doorbell (``sessions_app.doorbell``): a stream wakes on its session's ring at
once; a lost ring is found by the one shared poll; idle streams read nothing and share
one Redis connection and one subscription per session; the embedded form rings
in-process; and the listener survives a Redis restart.

What is counted is what an operator sees: SQL statements sent to Postgres (from every
thread, through an execute wrapper on each new connection) and the pub/sub clients and
subscriptions Redis reports.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis
from django.db.backends.signals import connection_created

from agents.events import EventType
from bench.harness import Processes
from sessions_app import doorbell
from sessions_app.tests.faults.servers import OwnRedis
from sessions_app.tests.test_ndjson_stream import append_one, append_texts, open_stream, session_with_events, token_for

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

WAIT = 5  # seconds: the longest any single step may take


class Statements:
    """Every SQL statement any thread of this process sends while the fixture is active."""

    def __init__(self) -> None:
        self.sql: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, execute, sql, params, many, context):
        with self.lock:
            self.sql.append(sql)
        return execute(sql, params, many, context)

    def clear(self) -> None:
        with self.lock:
            self.sql.clear()

    def event_reads(self) -> int:
        with self.lock:
            return sum(1 for sql in self.sql if sql.lstrip().startswith("SELECT") and "sessions_app_event" in sql)

    def polls(self) -> int:
        with self.lock:
            return sum(1 for sql in self.sql if "next_event_index FROM sessions_app_session WHERE id = ANY" in sql)


@pytest.fixture
def statements() -> Iterator[Statements]:
    # Streams read on pool threads, whose connections are made (again) for each read.
    seen = Statements()

    def attach(sender, connection, **kwargs):
        if seen not in connection.execute_wrappers:
            connection.execute_wrappers.append(seen)

    connection_created.connect(attach)
    yield seen
    connection_created.disconnect(attach)


@pytest.fixture
def platform(settings) -> Callable[..., None]:
    """``platform(STREAM_POLL_SECONDS=0.2, ...)``: set platform settings for the test."""

    def set_(**values) -> None:
        settings.PLATFORM = {**settings.PLATFORM, **values}

    return set_


def redis_client(url: str | None = None) -> redis.Redis:
    return redis.Redis.from_url(url or os.environ["REDIS_URL"])


def doorbell_connections(url: str | None = None) -> list[dict]:
    """The pub/sub connections this process's doorbells hold on Redis."""
    client = redis_client(url)
    try:
        return [c for c in client.client_list(_type="pubsub") if c.get("name") == f"doorbell-{os.getpid()}"]
    finally:
        client.close()


def subscribers(session_id: str, url: str | None = None) -> int:
    """How many Redis connections subscribe to the session's doorbell."""
    client = redis_client(url)
    try:
        [(_, count)] = client.pubsub_numsub(doorbell.channel(session_id))
        return int(count)
    finally:
        client.close()


async def eventually(condition: Callable[[], object], timeout: float = WAIT) -> None:
    """Until ``condition()`` (run on a thread: it may block) is true; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, "not within the time allowed"
        await asyncio.sleep(0.05)


async def test_a_stream_wakes_on_its_doorbell_without_waiting_for_the_poll(alice, platform):
    platform(STREAM_POLL_SECONDS=60)
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, await token_for(alice))
    await stream.records(1)
    began = time.monotonic()
    await append_texts(session.id, 1)
    [record] = await stream.records(1)
    assert record["index"] == 1
    assert time.monotonic() - began < 2, "woken by the ring, not by a poll 60 s away"
    await stream.close()


async def test_a_ring_for_events_the_last_read_returned_does_not_wake_the_stream_again():
    # The worker's commit often rings while a stream is reading what it committed: that
    # read returned those events, so a second read would find nothing.
    watch = doorbell.Watch("ses_ring", 0)
    watch.clear()  # before a read
    watch.ring(3)  # heard during the read...
    watch.next_index = 4  # ...which returned indexes 0 to 3
    waiting = asyncio.ensure_future(watch.wait())
    await asyncio.sleep(0.1)
    assert not waiting.done(), "woken for events already read"
    watch.ring(4)  # a later commit
    await asyncio.wait_for(waiting, WAIT)

    watch.clear()
    watch.ring(9)  # heard during a read that returned less than it announces
    watch.next_index = 6
    await asyncio.wait_for(watch.wait(), 0.1)  # at once: there is more to read

    watch.clear()
    watch.ring(None)  # a ring that names no index: look anyway
    watch.next_index = 10
    await asyncio.wait_for(watch.wait(), 0.1)


async def test_a_stream_from_where_the_log_goes_on_reads_the_table_once(alice, platform, statements):
    # A follow-up's stream starts at its first event: that event is there, so the log did
    # not end before it, and there is nothing to ask about the end first.
    platform(STREAM_POLL_SECONDS=60)
    session = await session_with_events(alice, 3)
    token = await token_for(alice)
    statements.clear()
    stream = await open_stream(session.id, token, start=1)
    assert [r["index"] for r in await stream.records(2)] == [1, 2]
    await asyncio.sleep(0.2)
    with statements.lock:
        asked_for_the_end = [sql for sql in statements.sql if "session.completed" in sql]
    assert statements.event_reads() == 1 and asked_for_the_end == []
    await stream.close()


async def test_a_lost_doorbell_is_caught_by_the_shared_poll(alice, platform, statements, monkeypatch):
    platform(STREAM_POLL_SECONDS=0.3)
    session = await session_with_events(alice, 1)
    token = await token_for(alice)
    streams = [await open_stream(session.id, token) for _ in range(5)]
    for stream in streams:
        await stream.records(1)
    monkeypatch.setattr(doorbell, "ring", lambda session_id, last_index: None)  # every ring is lost
    await append_texts(session.id, 1)
    for stream in streams:
        assert [r["index"] for r in await stream.records(1)] == [1]
    assert statements.polls() >= 1
    for stream in streams:
        await stream.close()


async def test_idle_streams_read_nothing_and_share_one_poll(alice, platform, statements):
    platform(STREAM_POLL_SECONDS=0.2)
    sessions = [await session_with_events(alice, 1) for _ in range(5)]
    token = await token_for(alice)
    streams = [await open_stream(session.id, token) for session in sessions for _ in range(4)]
    for stream in streams:
        await stream.records(1)
    await asyncio.sleep(0.3)  # every stream has read its replay and waits
    statements.clear()
    await asyncio.sleep(1.2)
    # 20 idle streams: no read of the event table, and one query per poll for all of them
    # (the old followers read the table once a poll interval each: 120 reads here).
    assert statements.event_reads() == 0
    assert 2 <= statements.polls() <= 9
    for stream in streams:
        await stream.close()


async def test_streams_of_many_sessions_share_one_redis_connection_and_one_subscription_each(alice):
    sessions = [await session_with_events(alice, 1) for _ in range(3)]
    token = await token_for(alice)
    streams = [await open_stream(session.id, token) for session in sessions for _ in range(3)]
    for stream in streams:
        await stream.records(1)
    [connection] = await asyncio.to_thread(doorbell_connections)
    assert int(connection["sub"]) == 3  # one channel per session, not per stream
    for session in sessions:
        assert await asyncio.to_thread(subscribers, session.id) == 1
        assert doorbell.followers(session.id) == 3
    for stream in streams:
        await stream.close()
    assert [doorbell.followers(session.id) for session in sessions] == [0, 0, 0]


async def test_a_session_nobody_follows_is_unsubscribed_at_the_next_poll(alice, platform):
    platform(STREAM_POLL_SECONDS=0.2)
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, await token_for(alice))
    await stream.records(1)
    assert await asyncio.to_thread(subscribers, session.id) == 1
    await stream.close()
    await eventually(lambda: subscribers(session.id) == 0)


async def test_the_embedded_form_rings_in_process_and_promptly(alice, platform):
    platform(DOORBELL_REDIS_URL="", STREAM_POLL_SECONDS=60)
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, await token_for(alice))
    await stream.records(1)
    began = time.monotonic()
    await append_texts(session.id, 2)  # from another thread, as the embedded worker threads do
    assert [r["index"] for r in await stream.records(2)] == [1, 2]
    assert time.monotonic() - began < 2, "woken by the in-process bell, not by a poll 60 s away"
    assert await asyncio.to_thread(doorbell_connections) == []  # no Redis involved
    await append_one(session.id, EventType.SESSION_COMPLETED)
    assert [r["type"] for r in await stream.rest()] == ["session.completed"]


@pytest.fixture
def own_redis(tmp_path):
    if not shutil.which("redis-server"):
        pytest.skip("needs redis-server")
    server = OwnRedis(Processes(tmp_path))
    server.start()
    yield server
    server.processes.stop_all()


@pytest.mark.slow
async def test_streams_go_on_by_the_poll_while_redis_is_down_and_the_listener_comes_back(alice, platform, own_redis):
    platform(DOORBELL_REDIS_URL=own_redis.url, STREAM_POLL_SECONDS=0.3)
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, await token_for(alice))
    await stream.records(1)
    assert await asyncio.to_thread(subscribers, session.id, own_redis.url) == 1

    await asyncio.to_thread(own_redis.kill)
    await append_texts(session.id, 1)  # its ring is lost: Redis is gone
    assert [r["index"] for r in await stream.records(1)] == [1]  # found by the poll

    await asyncio.to_thread(own_redis.start)  # same port, empty: every subscription is gone
    await eventually(lambda: subscribers(session.id, own_redis.url) == 1, timeout=15)
    await asyncio.sleep(0.5)  # the poll that follows a reconnection has run
    platform(DOORBELL_REDIS_URL=own_redis.url, STREAM_POLL_SECONDS=60)
    await asyncio.sleep(0.5)  # the poll re-times itself: from now on only a ring is fast
    began = time.monotonic()
    await append_texts(session.id, 1)
    assert [r["index"] for r in await stream.records(1)] == [2]
    assert time.monotonic() - began < 2, "the reconnected listener heard the ring"
    await stream.close()
