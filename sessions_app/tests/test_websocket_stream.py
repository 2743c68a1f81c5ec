"""``ws /ws/<slug>/session/:id``: replay from the table, then live events, for the owner only."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agent_platform.asgi import application
from agent_platform.tests.factories import issue_token
from agents.registry import get_agent
from sessions_app.eventlog import NewEvent, append_event, append_events
from sessions_app.events import EventType
from sessions_app.tests.factories import SessionFactory

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
