"""A WebSocket handshake to a path no route serves is closed with 4404 (never an HTTP
500 from the router), however the path is malformed."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agent_platform.asgi import application
from agent_platform.tests.factories import issue_token

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    "path",
    [
        "/ws/",
        "/ws/nothing",
        "/nothing/at/all",
        "/ws/weather/session/ses_x/extra",
        "/ws/weather/sessions/ses_x",
        "/ws/" + "x" * 300 + "/session/ses_x",
        "/ws/weather/session/" + "s" * 300,
        "/ws/weather/session/ses_%00",
        "/ws/%00/session/ses_x",
    ],
)
async def test_an_unknown_websocket_path_closes_with_4404(alice, path):
    token = await database_sync_to_async(issue_token)(alice)
    communicator = WebsocketCommunicator(application, path, subprotocols=["bearer", token])
    connected, _ = await communicator.connect()
    assert connected
    assert (await communicator.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4404}
    await communicator.disconnect()
