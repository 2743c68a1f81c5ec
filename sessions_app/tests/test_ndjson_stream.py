"""``GET /<slug>/v1/session/:id/stream``: NDJSON replay then live, through the real ASGI app;
and ``follow_events``, the one log follower behind every stream."""

from __future__ import annotations

import asyncio
import json
import random
import threading

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async

from agent_platform.asgi import application
from agent_platform.tests.factories import issue_token
from agents.events import EventType
from agents.registry import get_agent
from sessions_app import doorbell, streams
from sessions_app.eventlog import NewEvent, append_event, append_events, read_events
from sessions_app.streams import SessionFollower, follow_events
from sessions_app.tests.factories import SessionFactory

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

WAIT = 5  # seconds: the longest any single step may take


@database_sync_to_async
def session_with_events(principal, count: int, title: str = "a session"):
    session = SessionFactory(principal=principal, agent=get_agent("weather"), title=title)
    append_texts_now(session.id, count)
    return session


def append_texts_now(session_id: str, count: int) -> None:
    if count:
        append_events(session_id, [NewEvent(EventType.MESSAGE_APPENDED, {"text": f"t{n}"}) for n in range(count)])


append_texts = database_sync_to_async(append_texts_now)
append_one = database_sync_to_async(append_event)


@database_sync_to_async
def token_for(principal) -> str:
    return issue_token(principal)


@database_sync_to_async
def the_log(session_id: str) -> list[dict]:
    return [event.as_record() for event in read_events(session_id)]


class NdjsonStream:
    """One HTTP request to the stream route, driven through the project's ASGI application."""

    def __init__(
        self, session_id: str, token: str | None, start: str | int | None = 0, agent: str = "weather", headers=()
    ):
        query = f"startIndex={start}" if start is not None else ""
        path = f"/{agent}/v1/session/{session_id}/stream"
        sent = [(b"host", b"testserver"), *headers]
        if token:
            sent.append((b"authorization", f"Bearer {token}".encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": sent,
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        self.app = ApplicationCommunicator(application, scope)
        self.buffer = b""
        self.ended = False
        self.status = 0
        self.headers: dict[str, str] = {}

    async def open(self) -> NdjsonStream:
        await self.app.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await self.app.receive_output(WAIT)
        assert start["type"] == "http.response.start"
        self.status = start["status"]
        self.headers = {name.decode().lower(): value.decode() for name, value in start["headers"]}
        return self

    async def _more(self) -> None:
        message = await self.app.receive_output(WAIT)
        assert message["type"] == "http.response.body"
        self.buffer += message.get("body", b"")
        if not message.get("more_body", False):
            self.ended = True

    async def records(self, count: int) -> list[dict]:
        """The next ``count`` records; fails if they do not come within WAIT seconds each."""
        out: list[dict] = []
        while len(out) < count:
            if b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                out.append(json.loads(line))
                continue
            assert not self.ended, f"the stream ended after {len(out)} of {count} records"
            await self._more()
        return out

    async def rest(self) -> list[dict]:
        """Every remaining record, up to the end of the response."""
        while not self.ended:
            await self._more()
        lines, self.buffer = self.buffer.split(b"\n"), b""
        assert lines[-1] == b"", "every record ends with a newline"
        await self.app.wait(WAIT)
        return [json.loads(line) for line in lines[:-1]]

    async def json(self) -> dict:
        while not self.ended:
            await self._more()
        await self.app.wait(WAIT)
        return json.loads(self.buffer)

    async def nothing_more(self, seconds: float = 0.3) -> bool:
        return b"\n" not in self.buffer and await self.app.receive_nothing(timeout=seconds)

    async def close(self) -> None:
        """The client goes away mid-stream."""
        await self.app.send_input({"type": "http.disconnect"})
        await self.app.wait(WAIT)


async def open_stream(session_id: str, token: str | None, start: str | int | None = 0, **kwargs) -> NdjsonStream:
    return await NdjsonStream(session_id, token, start, **kwargs).open()


def group_members(session_id: str) -> set[int]:
    """The streams at the session's doorbell (in this process, on this loop)."""
    return set(range(doorbell.followers(session_id)))


# --- The route ----------------------------------------------------------------------------------


async def test_replay_from_zero_then_live_then_the_end(alice):
    session = await session_with_events(alice, 3)
    stream = await open_stream(session.id, await token_for(alice))
    assert stream.status == 200
    assert stream.headers["content-type"] == "application/x-ndjson"
    assert stream.headers["cache-control"] == "no-cache"
    assert stream.headers["x-accel-buffering"] == "no"
    replay = await stream.records(3)
    assert [(r["index"], r["data"]["text"], r["sessionId"]) for r in replay] == [
        (0, "t0", session.id),
        (1, "t1", session.id),
        (2, "t2", session.id),
    ]

    await append_one(session.id, EventType.MESSAGE_APPENDED, {"text": "live"})
    [live] = await stream.records(1)
    assert (live["index"], live["data"]["text"]) == (3, "live")

    await append_one(session.id, EventType.SESSION_WAITING)
    assert (await stream.records(1))[0]["type"] == "session.waiting"
    assert await stream.nothing_more(), "the stream stays open while the session waits"

    await append_one(session.id, EventType.SESSION_COMPLETED)
    await append_one(session.id, EventType.MESSAGE_RECEIVED, {"text": "after the end"})
    assert [r["type"] for r in await stream.rest()] == ["session.completed"]
    assert stream.ended


async def test_replay_from_a_start_index(alice):
    session = await session_with_events(alice, 5)
    stream = await open_stream(session.id, await token_for(alice), start=3)
    assert [r["index"] for r in await stream.records(2)] == [3, 4]
    assert await stream.nothing_more()
    await stream.close()


@pytest.mark.parametrize("terminal", [EventType.SESSION_COMPLETED, EventType.SESSION_FAILED])
async def test_the_stream_ends_after_a_terminal_event(alice, terminal):
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, await token_for(alice))
    await stream.records(1)
    await append_one(session.id, terminal)
    assert [r["type"] for r in await stream.rest()] == [terminal]


async def test_live_events_from_another_thread_arrive_in_order(alice):
    session = await session_with_events(alice, 0)
    stream = await open_stream(session.id, await token_for(alice))
    assert await stream.nothing_more(0.1)
    for burst in [1, 4, 2]:
        await append_texts(session.id, burst)
    assert [r["index"] for r in await stream.records(7)] == list(range(7))
    await stream.close()


async def test_a_start_index_past_the_end_waits_for_that_event(alice):
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, await token_for(alice), start=3)
    assert await stream.nothing_more()
    await append_texts(session.id, 3)
    assert [r["index"] for r in await stream.records(1)] == [3]
    await stream.close()


async def test_a_start_index_past_a_finished_log_ends_at_once(alice):
    session = await session_with_events(alice, 1)
    await append_one(session.id, EventType.SESSION_COMPLETED)
    stream = await open_stream(session.id, await token_for(alice), start=2)
    assert await stream.rest() == []


@pytest.mark.parametrize("seed", [7, 8, 9, 10])
async def test_reconnecting_with_start_index_misses_nothing_and_repeats_nothing(alice, seed):
    """Random bursts of appends interleaved with reads and disconnects at random points;
    the client resumes from the index after the last record it handled."""
    rng = random.Random(seed)
    total = rng.randint(0, 4)
    session = await session_with_events(alice, total)
    token = await token_for(alice)
    seen: list[dict] = []
    for _ in range(4):
        burst = rng.randint(0, 5)
        opening = NdjsonStream(session.id, token, start=len(seen))
        # Appends race the stream's replay: committed before, during or after it.
        stream, _ = await asyncio.gather(opening.open(), append_texts(session.id, burst))
        total += burst
        for _ in range(rng.randint(1, 3)):
            seen += await stream.records(rng.randint(0, total - len(seen)))
            more = rng.randint(0, 3)
            await append_texts(session.id, more)
            total += more
        await stream.close()  # whatever the stream had sent beyond `seen` is dropped
    await append_one(session.id, EventType.SESSION_COMPLETED)
    final = await open_stream(session.id, token, start=len(seen))
    seen += await final.rest()
    assert [r["index"] for r in seen] == list(range(total + 1))
    assert seen == await the_log(session.id)


@pytest.mark.parametrize("start", ["-1", "abc", "1.5", ""])
async def test_a_bad_start_index_is_400(alice, start):
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, await token_for(alice), start=start or None)
    if start == "":
        assert stream.status == 200  # absent means 0
        await stream.close()
        return
    assert stream.status == 400
    assert (await stream.json())["error"] == "invalid"


async def test_no_token_is_401(alice):
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, None)
    assert stream.status == 401
    assert stream.headers["www-authenticate"].startswith("Bearer")
    assert (await stream.json())["error"] == "not_authenticated"


async def test_a_revoked_or_forged_token_is_401(alice):
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, "apt_forged")
    assert stream.status == 401
    assert (await stream.json())["error"] == "authentication_failed"


@pytest.mark.parametrize("who", ["bob", "mallory"])
async def test_anyone_but_the_owner_gets_403_and_learns_nothing(alice, bob, mallory, who):
    session = await session_with_events(alice, 2, title="alice's secret plans")
    intruder = bob if who == "bob" else mallory
    stream = await open_stream(session.id, await token_for(intruder), headers=[(b"accept", b"application/x-ndjson")])
    assert stream.status == 403
    assert stream.headers["content-type"] == "application/json"
    body = await stream.json()
    assert body == {"error": "forbidden", "message": "You do not own this session."}
    assert b"secret plans" not in json.dumps(body).encode()


async def test_an_unknown_session_or_agent_is_404(alice):
    session = await session_with_events(alice, 1)
    token = await token_for(alice)
    unknown = await open_stream("ses_unknown", token)
    assert unknown.status == 404
    assert (await unknown.json())["error"] == "session_not_found"
    elsewhere = await open_stream(session.id, token, agent="no-such-agent")
    assert elsewhere.status == 404
    assert (await elsewhere.json())["error"] == "agent_not_found"


async def test_idle_streams_hold_no_thread_each(alice):
    session = await session_with_events(alice, 1)
    token = await token_for(alice)
    before = threading.active_count()
    streams = [await open_stream(session.id, token) for _ in range(20)]
    for stream in streams:
        await stream.records(1)
    assert await streams[-1].nothing_more(0.2)
    # A request's sync part runs on a thread of its own; a stream lets it go once it is
    # streaming (shared pool threads may still be started, a few at most).
    assert threading.active_count() - before < 10
    for stream in streams:
        await stream.close()


async def test_a_client_that_goes_away_leaves_the_group(alice):
    session = await session_with_events(alice, 1)
    stream = await open_stream(session.id, await token_for(alice))
    await stream.records(1)
    assert len(group_members(session.id)) == 1
    await stream.close()
    assert group_members(session.id) == set()


# --- follow_events ------------------------------------------------------------------------------


async def collect(iterator, count: int) -> list:
    out = []
    async with asyncio.timeout(WAIT):
        async for event in iterator:
            out.append(event)
            if len(out) == count:
                break
    return out


async def test_the_follower_reads_in_batches_without_gaps_or_repeats(alice):
    session = await session_with_events(alice, 10)
    async with SessionFollower(session.id, 2, batch=3) as follower:
        events = await collect(follower, 8)
        assert [e.index for e in events] == list(range(2, 10))
        assert follower.next_index == 10


async def test_an_append_between_the_replay_read_and_the_wait_is_heard(alice, monkeypatch):
    """The race "committed after the catch-up query": the doorbell of an event
    committed right after the replay read wakes the follower (no poll needed)."""
    session = await session_with_events(alice, 2)
    real_read = streams._read_events
    reads = 0

    async def read_then_append(*args):
        nonlocal reads
        events = await real_read(*args)
        reads += 1
        if reads == 1:
            await append_texts(session.id, 1)
        return events

    monkeypatch.setattr(streams, "_read_events", read_then_append)
    follower = SessionFollower(session.id, 0, poll_interval=60)
    async with follower:
        assert [e.index for e in await collect(follower, 3)] == [0, 1, 2]


async def test_a_lost_doorbell_only_delays(alice, monkeypatch):
    session = await session_with_events(alice, 1)
    monkeypatch.setattr(doorbell, "ring", lambda session_id, last_index: None)
    async with SessionFollower(session.id, 0, poll_interval=0.2) as follower:
        events = follower.__aiter__()
        assert (await anext(events)).index == 0
        await append_texts(session.id, 2)
        async with asyncio.timeout(WAIT):
            assert [(await anext(events)).index, (await anext(events)).index] == [1, 2]


async def test_the_follower_stops_after_the_terminal_event_and_leaves_the_group(alice):
    session = await session_with_events(alice, 1)
    await append_one(session.id, EventType.SESSION_FAILED)
    await append_texts(session.id, 1)
    events = [e async for e in follow_events(session.id, 0)]
    assert [e.type for e in events] == ["message.appended", "session.failed"]
    assert group_members(session.id) == set()


async def test_a_cancelled_follower_leaves_the_group(alice):
    session = await session_with_events(alice, 0)
    started = asyncio.Event()

    async def follow():
        async with SessionFollower(session.id, 0) as follower:
            started.set()
            async for _ in follower:
                pass

    task = asyncio.create_task(follow())
    async with asyncio.timeout(WAIT):
        await started.wait()
    assert len(group_members(session.id)) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert group_members(session.id) == set()


async def test_a_negative_start_index_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        SessionFollower("ses_x", -1)
