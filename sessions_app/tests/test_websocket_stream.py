"""``ws /ws/<slug>/session/:id``: replay from the table, then live events, for the owner only."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agent_platform import handlers
from agent_platform.asgi import application
from agent_platform.tests.factories import issue_token
from agents.events import EventType
from agents.registry import get_agent
from sessions_app import consumers
from sessions_app.eventlog import NewEvent, append_event, append_events
from sessions_app.tests.factories import SessionFactory
from sessions_app.tests.test_ndjson_stream import NdjsonStream, group_members

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@database_sync_to_async
def session_with_events(principal, count: int):
    session = SessionFactory(principal=principal, agent=get_agent("weather"))
    append_events(session.id, [NewEvent(EventType.MESSAGE_APPENDED, {"text": str(n)}) for n in range(count)])
    return session


@database_sync_to_async
def token_for(principal) -> str:
    return issue_token(principal)


def connect(session_id: str, token: str | None, start: str = "0", **kwargs) -> WebsocketCommunicator:
    subprotocols = ["bearer", token] if token else None
    return WebsocketCommunicator(
        application, f"/ws/weather/session/{session_id}?startIndex={start}", subprotocols=subprotocols, **kwargs
    )


async def receive_records(communicator: WebsocketCommunicator, count: int) -> list[dict]:
    return [json.loads(await communicator.receive_from(timeout=5)) for _ in range(count)]


async def test_the_owner_gets_the_replay_then_live_events_in_order(alice):
    session = await session_with_events(alice, 3)
    communicator = connect(session.id, await token_for(alice), start="1")
    connected, subprotocol = await communicator.connect()
    assert connected and subprotocol == "bearer"
    replay = await receive_records(communicator, 2)
    assert [(r["index"], r["data"]["text"]) for r in replay] == [(1, "1"), (2, "2")]

    await database_sync_to_async(append_event)(session.id, EventType.MESSAGE_APPENDED, {"text": "live"})
    [live] = await receive_records(communicator, 1)
    assert (live["index"], live["data"]["text"], live["sessionId"]) == (3, "live", session.id)
    await communicator.disconnect()


async def test_each_read_takes_a_running_place_of_its_tenant_as_requests_do(alice, settings, monkeypatch):
    # One place per tenant (2 places, a share of 0.5), and no step-aside within the test.
    settings.PLATFORM = {
        **settings.PLATFORM,
        "REQUEST_RUNNING": 2,
        "REQUEST_TENANT_SHARE": 0.5,
        "REQUEST_STEP_ASIDE_SECONDS": 30.0,
    }
    monkeypatch.setattr(handlers, "_running_slots", None)
    session = await session_with_events(alice, 2)
    communicator = connect(session.id, await token_for(alice))
    held = handlers.running_slot(handlers.tenant_key(alice.tenant_id))  # the tenant's request, running
    await held.__aenter__()
    try:
        assert (await communicator.connect())[0]
        assert await communicator.receive_nothing(timeout=0.5)  # the replay waits for the place
    finally:
        await held.__aexit__(None, None, None)
    assert [r["index"] for r in await receive_records(communicator, 2)] == [0, 1]
    await communicator.disconnect()


async def test_the_stream_ends_after_the_session_completes(alice):
    session = await session_with_events(alice, 1)
    communicator = connect(session.id, await token_for(alice))
    await communicator.connect()
    await receive_records(communicator, 1)
    await database_sync_to_async(append_event)(session.id, EventType.SESSION_COMPLETED)
    [last] = await receive_records(communicator, 1)
    assert last["type"] == "session.completed"
    assert (await communicator.receive_output(timeout=5))["type"] == "websocket.close"


async def test_an_authorization_header_works_too(alice):
    session = await session_with_events(alice, 1)
    token = await token_for(alice)
    communicator = WebsocketCommunicator(
        application, f"/ws/weather/session/{session.id}", headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    assert (await communicator.connect())[0]
    assert (await receive_records(communicator, 1))[0]["index"] == 0
    await communicator.disconnect()


@pytest.mark.parametrize(("who", "code"), [("nobody", 4401), ("forged", 4401), ("bob", 4403), ("mallory", 4403)])
async def test_anyone_but_the_owner_is_closed_with_a_clear_code(alice, bob, mallory, who, code):
    session = await session_with_events(alice, 2)
    token = {"nobody": None, "forged": "apt_forged", "bob": None, "mallory": None}[who]
    if who in {"bob", "mallory"}:
        token = await token_for(bob if who == "bob" else mallory)
    communicator = connect(session.id, token)
    await communicator.connect()
    closed = await communicator.receive_output(timeout=5)
    assert (closed["type"], closed["code"]) == ("websocket.close", code)


async def test_an_unknown_session_closes_with_4404(alice):
    communicator = connect("ses_unknown", await token_for(alice))
    await communicator.connect()
    assert (await communicator.receive_output(timeout=5))["code"] == 4404


@pytest.mark.parametrize("start", ["-1", "x"])
async def test_a_bad_start_index_closes_with_4400(alice, start):
    session = await session_with_events(alice, 1)
    communicator = connect(session.id, await token_for(alice), start=start)
    await communicator.connect()
    assert (await communicator.receive_output(timeout=5))["code"] == 4400


async def test_a_page_from_another_site_cannot_open_the_socket(alice):
    session = await session_with_events(alice, 1)
    communicator = connect(session.id, await token_for(alice), headers=[(b"origin", b"https://evil.example")])
    connected, _ = await communicator.connect()
    assert not connected


async def test_a_start_index_past_the_end_waits_for_that_event(alice):
    session = await session_with_events(alice, 1)
    communicator = connect(session.id, await token_for(alice), start="2")
    await communicator.connect()
    assert await communicator.receive_nothing(timeout=0.3)
    await database_sync_to_async(append_events)(
        session.id,
        [NewEvent(EventType.MESSAGE_APPENDED, {"text": "a"}), NewEvent(EventType.MESSAGE_APPENDED, {"text": "b"})],
    )
    [record] = await receive_records(communicator, 1)
    assert record["index"] == 2
    await asyncio.sleep(0)
    await communicator.disconnect()


# --- Same records as NDJSON; lag; inbound frames --------------------------------------------------


async def receive_until_close(communicator: WebsocketCommunicator) -> tuple[list[dict], dict]:
    """Every record up to the close frame, and the close frame."""
    records = []
    while True:
        message = await communicator.receive_output(timeout=5)
        if message["type"] == "websocket.close":
            return records, message
        records.append(json.loads(message["text"]))


@pytest.mark.parametrize("start", [0, 2])
async def test_the_websocket_stream_equals_the_ndjson_stream(alice, start):
    session = await session_with_events(alice, 4)
    token = await token_for(alice)
    ndjson = await NdjsonStream(session.id, token, start=start).open()
    socket = connect(session.id, token, start=str(start))
    assert (await socket.connect())[0]
    await database_sync_to_async(append_events)(
        session.id,
        [
            NewEvent(EventType.TURN_STARTED),
            NewEvent(EventType.MESSAGE_APPENDED, {"text": "héllo \u2603"}),
            NewEvent(EventType.ACTIONS_REQUESTED, {"calls": [{"callId": "c1", "toolName": "t", "args": {"n": 1}}]}),
        ],
    )
    await database_sync_to_async(append_event)(session.id, EventType.SESSION_WAITING)
    await database_sync_to_async(append_event)(session.id, EventType.SESSION_COMPLETED)
    over_http = await ndjson.rest()
    over_socket, closed = await receive_until_close(socket)
    assert closed["code"] == 1000
    assert over_socket == over_http
    assert [r["index"] for r in over_http] == list(range(start, 9))
    assert over_http[-1]["type"] == "session.completed"


async def test_a_client_too_far_behind_the_log_is_closed_with_4008_and_resumes(alice, monkeypatch):
    monkeypatch.setattr(consumers, "LAG_LIMIT", 5)
    session = await session_with_events(alice, 1)
    other = await session_with_events(alice, 0)
    token = await token_for(alice)
    slow = connect(session.id, token)
    bystander = connect(other.id, token)
    assert (await slow.connect())[0] and (await bystander.connect())[0]
    await receive_records(slow, 1)  # caught up with the log

    await database_sync_to_async(append_events)(
        session.id, [NewEvent(EventType.MESSAGE_APPENDED, {"text": str(n)}) for n in range(20)]
    )
    received, closed = await receive_until_close(slow)
    assert (closed["code"], closed.get("reason")) == (4008, "lagging")
    assert len(received) < 20
    assert [r["index"] for r in received] == list(range(1, 1 + len(received)))

    # Other sockets are unaffected.
    await database_sync_to_async(append_event)(other.id, EventType.MESSAGE_APPENDED, {"text": "still here"})
    assert (await receive_records(bystander, 1))[0]["data"]["text"] == "still here"
    await bystander.disconnect()

    # The client resumes from the index after its last record: a replay is never "lagging".
    last = received[-1]["index"] if received else 0
    resumed = connect(session.id, token, start=str(last + 1))
    assert (await resumed.connect())[0]
    rest = await receive_records(resumed, 20 - last)
    assert [r["index"] for r in rest] == list(range(last + 1, 21))
    assert await resumed.receive_nothing(timeout=0.2)
    await resumed.disconnect()


async def test_a_send_that_cannot_drain_closes_with_4008(alice, monkeypatch):
    monkeypatch.setattr(consumers, "SEND_TIMEOUT", 0.05)

    async def stuck_send(self, text_data=None, bytes_data=None, close=False):
        await asyncio.sleep(5)

    monkeypatch.setattr(consumers.SessionStreamConsumer, "send", stuck_send)
    session = await session_with_events(alice, 1)
    communicator = connect(session.id, await token_for(alice))
    assert (await communicator.connect())[0]
    closed = await communicator.receive_output(timeout=5)
    assert (closed["type"], closed["code"], closed.get("reason")) == ("websocket.close", 4008, "lagging")


@pytest.mark.parametrize("frame", ["text", "bytes"])
async def test_an_oversized_inbound_frame_closes_with_1009(alice, frame):
    session = await session_with_events(alice, 1)
    communicator = connect(session.id, await token_for(alice))
    assert (await communicator.connect())[0]
    await receive_records(communicator, 1)
    await communicator.send_to(text_data="small frames are ignored")
    assert await communicator.receive_nothing(timeout=0.2)
    big = "x" * (consumers.MAX_INBOUND_FRAME + 1)
    await (communicator.send_to(text_data=big) if frame == "text" else communicator.send_to(bytes_data=big.encode()))
    closed = await communicator.receive_output(timeout=5)
    assert (closed["type"], closed["code"]) == ("websocket.close", 1009)
    await communicator.disconnect()


async def test_a_closed_socket_leaves_the_sessions_group(alice):
    session = await session_with_events(alice, 1)
    communicator = connect(session.id, await token_for(alice))
    assert (await communicator.connect())[0]
    await receive_records(communicator, 1)
    assert len(group_members(session.id)) == 1
    await communicator.disconnect()
    assert group_members(session.id) == set()


async def test_where_the_server_refuses_1009_an_oversized_frame_closes_with_4413(alice, monkeypatch):
    """Daphne (autobahn) lets an application close only with 1000 or 3000-4999."""
    real_close = consumers.SessionStreamConsumer.close

    async def daphne_close(self, code=None, reason=None):
        if code is not None and code != 1000 and not 3000 <= code <= 4999:
            raise ValueError(f"invalid close code {code}")
        await real_close(self, code, reason)

    monkeypatch.setattr(consumers.SessionStreamConsumer, "close", daphne_close)
    session = await session_with_events(alice, 1)
    communicator = connect(session.id, await token_for(alice))
    assert (await communicator.connect())[0]
    await receive_records(communicator, 1)
    await communicator.send_to(text_data="x" * (consumers.MAX_INBOUND_FRAME + 1))
    closed = await communicator.receive_output(timeout=5)
    assert (closed["type"], closed["code"]) == ("websocket.close", 4413)
    await communicator.disconnect()


async def test_while_redis_cannot_be_reached_the_socket_is_closed_with_4503_to_retry_later(alice, settings):
    from channels.layers import get_channel_layer

    from bench.harness import free_port

    session = await session_with_events(alice, 1)
    token = await token_for(alice)
    nothing_listens = f"redis://127.0.0.1:{free_port()}/1"
    backend = "channels_redis.pubsub.RedisPubSubChannelLayer"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": backend, "CONFIG": {"hosts": [nothing_listens]}}}
    try:
        communicator = connect(session.id, token)
        connected, subprotocol = await communicator.connect()
        assert (connected, subprotocol) == (True, "bearer")  # a browser sees the close code, not a failed handshake
        closed = await communicator.receive_output(timeout=5)
        assert (closed["type"], closed["code"], closed.get("reason")) == ("websocket.close", 4503, "unavailable")
    finally:
        await get_channel_layer().flush()
