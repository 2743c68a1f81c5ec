"""``ws /ws/<slug>/session/:id?startIndex=N``: a session's events over a WebSocket.

The consumer joins the session's group first, then replays from the table, then
reads the table again on each "appended" signal. Every send comes from the
table in index order and the next index to send only moves forward, so the seam
between replay and live neither drops nor repeats an event.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from agent_platform.auth import authenticate_websocket
from agents.registry import get_visible_agent, surface_for
from sessions_app.access import NotSessionOwner, SessionNotFound, owned_session
from sessions_app.eventlog import read_events, session_group
from sessions_app.events import TERMINAL_SESSION_EVENTS

# Application close codes (4000 + the HTTP status they mirror).
CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_AGENT_INVALID = 4503
REPLAY_BATCH = 500


def _start_index(query_string: bytes) -> int | None:
    """``startIndex`` from the query string (default 0); None when it is invalid."""
    values = parse_qs(query_string.decode("latin-1")).get("startIndex", ["0"])
    raw = values[-1]
    return int(raw) if raw.isdigit() else None


@database_sync_to_async
def _find_session(scope: dict[str, Any], agent_slug: str, session_id: str) -> int | str:
    """The session id if the caller may stream it, else a close code."""
    caller = authenticate_websocket(scope)
    if caller is None:
        return CLOSE_UNAUTHORIZED
    agent = get_visible_agent(agent_slug, caller.tenant)
    if agent is None:
        return CLOSE_NOT_FOUND
    if surface_for(agent).errors:
        return CLOSE_AGENT_INVALID
    try:
        return owned_session(agent, session_id, caller.principal).pk
    except SessionNotFound:
        return CLOSE_NOT_FOUND
    except NotSessionOwner:
        return CLOSE_FORBIDDEN


class SessionStreamConsumer(AsyncWebsocketConsumer):
    session_id: str
    next_index: int

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        subprotocol = "bearer" if "bearer" in (self.scope.get("subprotocols") or []) else None
        await self.accept(subprotocol)
        start = _start_index(self.scope.get("query_string", b""))
        if start is None:
            await self.close(CLOSE_BAD_REQUEST, "startIndex must be a non-negative integer")
            return
        found = await _find_session(self.scope, kwargs["agent_slug"], kwargs["session_id"])
        if isinstance(found, int):
            await self.close(found)
            return
        self.session_id = found
        self.next_index = start
        self._send_lock = asyncio.Lock()
        await self.channel_layer.group_add(session_group(self.session_id), self.channel_name)
        await self._send_new_events()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "session_id"):
            await self.channel_layer.group_discard(session_group(self.session_id), self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The stream is one-way; anything a client sends is ignored."""

    async def event_appended(self, message: dict[str, Any]) -> None:
        if message["index"] >= self.next_index:
            await self._send_new_events()

    async def _send_new_events(self) -> None:
        async with self._send_lock:
            while True:
                events = await database_sync_to_async(read_events)(self.session_id, self.next_index, REPLAY_BATCH)
                for event in events:
                    await self.send(text_data=json.dumps(event.as_record()))
                    self.next_index = event.index + 1
                    if event.type in TERMINAL_SESSION_EVENTS:
                        await self.close(1000)
                        return
                if len(events) < REPLAY_BATCH:
                    return
