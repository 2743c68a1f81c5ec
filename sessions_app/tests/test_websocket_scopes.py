"""A stream over a WebSocket needs a token with ``read`` or ``sessions``, like the
stream route: a ``manage``-only token is closed with 4403 before anything is looked up."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agent_platform.asgi import application
from agent_platform.models import ApiToken

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_a_websocket_stream_checks_the_tokens_scope_first(alice):
    # One test for the three cases: each transactional test pays a database flush.
    for scopes, code in [(["manage"], 4403), (["read"], 4404), (["sessions"], 4404)]:
        _, token = await database_sync_to_async(ApiToken.issue)(alice, scopes=scopes)
        path = "/ws/weather/session/ses_unknown"
        communicator = WebsocketCommunicator(application, path, subprotocols=["bearer", token])
        connected, _ = await communicator.connect()
        assert connected
        assert (await communicator.receive_output(timeout=5)) == {"type": "websocket.close", "code": code}, scopes
        await communicator.disconnect()
