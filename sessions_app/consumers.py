"""``ws /ws/<slug>/session/:id?startIndex=N``: a session's events over a WebSocket.

After the handshake is authorised, one task per connection iterates a
``SessionFollower`` (see ``sessions_app.streams``: doorbell joined first, replay
from the table, then live) and sends each event as one text frame. The records
and their order are exactly those of the NDJSON stream.

Memory stays bounded per connection: the follower holds at most one batch read
from the table, and a client that cannot keep up is closed with 4008
``lagging`` (RELIABILITY.md row 7) so it can resume from its last index:

- once the replay has caught up, falling more than ``LAG_LIMIT`` events behind
  the head of the log (as announced by the log's doorbells), or
- one send that does not complete within ``SEND_TIMEOUT`` seconds (a server
  that applies backpressure is telling us the outgoing buffer cannot drain).

Daphne applies none (daphne#170): its ``send`` returns at once and Twisted keeps
whatever the client has not read. So under daphne the consumer waits, before each
send, until the connection's user-space write buffer is below Twisted's
``bufferSize`` (64 KiB): a client that stops reading holds at most that, plus the
follower's one batch, and is closed 4008 after ``SEND_TIMEOUT`` without progress.
The 4008 frame queues behind what the client has not read yet, so the connection
is kept ``LAGGING_CLOSE_GRACE`` seconds for it to read up to the frame (autobahn
would drop it, and the frame, after 1 s).

The stream is one-way; an inbound frame larger than ``MAX_INBOUND_FRAME`` closes
the socket with 1009.

While the channel layer (Redis) cannot be reached, a handshake is accepted and
closed at once with 4503 ("try again later", as HTTP 503): channels gives every
consumer a channel of its own before the first message, and without Redis that
fails, which daphne would otherwise answer with an HTTP 500. A client reconnects
with backoff from its last index; once Redis is back the stream works as usual.
(1013, the standard "try again later", cannot be used: daphne's autobahn only
lets an application close with 1000 or 3000-4999.)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from redis.exceptions import RedisError

from agent_platform.auth import authenticate_websocket
from agent_platform.daphne_limits import MAX_INBOUND_FRAME
from agent_platform.handlers import running_slot, tenant_key
from agent_platform.request_ids import HEADER, accepted_or_new, request_id
from agent_platform.scopes import required_scopes
from agents.events import TERMINAL_SESSION_EVENTS
from agents.registry import get_visible_agent, surface_for
from sessions_app import stream_quota
from sessions_app.access import NotSessionOwner, SessionNotFound, owned_session
from sessions_app.quotas import QuotaExceeded
from sessions_app.stream_quota import StreamSlot
from sessions_app.streams import SessionFollower, record_json

logger = logging.getLogger(__name__)

# Application close codes (4000 + the HTTP status they mirror, and 4008 for lag).
CLOSE_NORMAL = 1000
CLOSE_MESSAGE_TOO_BIG = 1009
CLOSE_LAGGING = 4008
CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403
# A token needs one of these to follow a stream (the GET of an agent route).
STREAM_SCOPES = required_scopes("/ws/", "GET")
CLOSE_PAYLOAD_TOO_LARGE = 4413
CLOSE_SERVER_ERROR = 4500
# Try again later: the agent's tree has errors, or Redis cannot be reached.
CLOSE_AGENT_INVALID = 4503
CLOSE_UNAVAILABLE = 4503
CLOSE_NOT_FOUND = 4404
CLOSE_QUOTA_EXCEEDED = 4429  # the tenant holds its cap of open streams (HTTP 429)

# A client more than this many events behind the head of the log is lagging.
LAG_LIMIT = 1000
# A single send taking longer than this (seconds) means the client is not draining.
SEND_TIMEOUT = 10.0
# How often a send waiting for daphne's write buffer to drain looks again (seconds).
DRAIN_POLL = 0.05
# How long a lagging client has to read up to the 4008 close frame (seconds).
LAGGING_CLOSE_GRACE = 30.0


def _start_index(query_string: bytes) -> int | None:
    """``startIndex`` from the query string (default 0); None when it is invalid."""
    values = parse_qs(query_string.decode("latin-1")).get("startIndex", ["0"])
    raw = values[-1]
    return int(raw) if raw.isdigit() else None


# What the channel layer raises while Redis cannot be reached (redis-py's errors, or
# the socket's own).
CHANNEL_LAYER_DOWN = (RedisError, OSError)

# Where ``keep_server_send`` puts the server's own ``send`` in the scope.
SERVER_SEND = "platform.server_send"


def keep_server_send(application: Any) -> Any:
    """ASGI middleware, outermost: keeps the server's ``send`` in the scope, because
    middleware on the way in may wrap it (channels' session middleware does) and the
    consumer asks the server's connection itself about its write buffer."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> Any:
        return await application({**scope, SERVER_SEND: send}, receive, send)

    return app


def _daphne_protocol(send: Any) -> Any:
    """Daphne's protocol object of the connection (its ``send`` is
    ``partial(Server.handle_reply, protocol)``); None under another server or in tests."""
    return next(iter(getattr(send, "args", ())), None)


def _buffer_full_check(send: Any) -> Callable[[], bool] | None:
    """Under daphne, a function telling whether the connection's write buffer is over
    its limit (Twisted's ``bufferSize``); None elsewhere."""
    full = getattr(getattr(_daphne_protocol(send), "transport", None), "_isSendBufferFull", None)
    return full if callable(full) else None


@database_sync_to_async
def _find_session(scope: dict[str, Any], agent_slug: str, session_id: str) -> int | tuple[str, StreamSlot]:
    """The session id and the stream's place in its tenant's open-streams quota if the
    caller may stream it, else a close code."""
    caller = authenticate_websocket(scope)
    if caller is None:
        return CLOSE_UNAUTHORIZED
    if caller.token is not None and not caller.token.allows(STREAM_SCOPES):
        return CLOSE_FORBIDDEN
    agent = get_visible_agent(agent_slug, caller.tenant)
    if agent is None:
        return CLOSE_NOT_FOUND
    if surface_for(agent).errors:
        return CLOSE_AGENT_INVALID
    try:
        session = owned_session(agent, session_id, caller)
    except SessionNotFound:
        return CLOSE_NOT_FOUND
    except NotSessionOwner:
        return CLOSE_FORBIDDEN
    try:
        return session.pk, stream_quota.open_stream(caller.tenant)
    except QuotaExceeded:
        return CLOSE_QUOTA_EXCEEDED


def _subprotocol(scope: dict[str, Any]) -> str | None:
    """The subprotocol the handshake answers with: a browser that offered ``bearer``
    (with its token) drops a connection that does not select it."""
    return "bearer" if "bearer" in (scope.get("subprotocols") or []) else None


def _request_id_header(scope: dict[str, Any]) -> str | None:
    """The handshake's ``X-Request-ID``, if it sent one (hostile values are replaced later)."""
    for name, value in scope.get("headers") or []:
        if name.lower() == b"x-request-id":
            return bytes(value).decode("latin-1")
    return None


class SessionStreamConsumer(AsyncWebsocketConsumer):
    _stream_task: asyncio.Task[None] | None = None
    _accepted = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # One id for the connection, as for an HTTP request: its lines carry it, and the
        # handshake's answer echoes it (X-Request-ID).
        self.request_id = accepted_or_new(_request_id_header(scope))
        try:
            with request_id(self.request_id):
                await super().__call__(scope, receive, send)
        except CHANNEL_LAYER_DOWN as error:
            logger.warning("closing a stream with %s: the channel layer is unavailable: %r", CLOSE_UNAVAILABLE, error)
            await self.disconnect(CLOSE_UNAVAILABLE)
            await self._close_unavailable(scope, receive, send)

    async def _close_unavailable(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Close with 4503, accepting first if the handshake is still open (channels
        failed before handing it to ``connect``)."""
        if not self._accepted:
            message = await receive()
            if message["type"] != "websocket.connect":
                return  # the client went away already
            await send({"type": "websocket.accept", "subprotocol": _subprotocol(scope), "headers": self._headers()})
        await send({"type": "websocket.close", "code": CLOSE_UNAVAILABLE, "reason": "unavailable"})

    def _headers(self) -> list[tuple[bytes, bytes]]:
        return [(HEADER.lower().encode(), self.request_id.encode())]

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        await self.accept(_subprotocol(self.scope), headers=self._headers())
        self._accepted = True
        start = _start_index(self.scope.get("query_string", b""))
        if start is None:
            await self.close(CLOSE_BAD_REQUEST, "startIndex must be a non-negative integer")
            return
        found = await _find_session(self.scope, kwargs["agent_slug"], kwargs["session_id"])
        if isinstance(found, int):
            await self.close(found)
            return
        session_id, slot = found
        self._stream_task = asyncio.create_task(self._stream(session_id, slot, start))

    async def disconnect(self, code: int) -> None:
        task = self._stream_task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def websocket_receive(self, message: dict[str, Any]) -> None:
        """The stream is one-way: frames are ignored, but an oversized one closes the socket."""
        text, data = message.get("text"), message.get("bytes")
        size = len(data) if data is not None else len(text.encode("utf-8", "surrogatepass")) if text else 0
        if size > MAX_INBOUND_FRAME:
            await self._close_too_big()

    async def _close_too_big(self) -> None:
        try:
            await self.close(CLOSE_MESSAGE_TOO_BIG, "frame too large")
        except Exception:
            # Daphne (autobahn) only lets an application close with 1000 or
            # 3000-4999 (its own --websocket-max-message-size closes with 1009).
            logger.debug("the server refused close code 1009", exc_info=True)
            await self.close(CLOSE_PAYLOAD_TOO_LARGE, "frame too large")

    async def _send_drained(self, text: str) -> None:
        """Send once the connection's write buffer has room (see the module docstring)."""
        full = _buffer_full_check(self.scope.get(SERVER_SEND))
        while full is not None and full():
            await asyncio.sleep(DRAIN_POLL)
        await self.send(text_data=text)

    async def _close_lagging(self) -> None:
        protocol = _daphne_protocol(self.scope.get(SERVER_SEND))
        if hasattr(protocol, "closeHandshakeTimeout") and hasattr(protocol, "sendClose"):
            # Under daphne: autobahn's close, per connection, because daphne drops the
            # ASGI close reason, and so that the frame waits for a slow reader.
            protocol.closeHandshakeTimeout = LAGGING_CLOSE_GRACE
            protocol.sendClose(code=CLOSE_LAGGING, reason="lagging")
            return
        await self.close(CLOSE_LAGGING, "lagging")

    async def _stream(self, session_id: str, slot: StreamSlot, start: int) -> None:
        try:
            # Each read of the log takes a running place as its tenant's requests do (as the
            # NDJSON stream's reads do): many streams of one tenant do not crowd out another's.
            gate = functools.partial(running_slot, tenant_key(slot.tenant_id))
            async with stream_quota.holding(slot), SessionFollower(session_id, start, gate=gate) as follower:
                async for event in follower:
                    try:
                        await asyncio.wait_for(self._send_drained(record_json(event)), SEND_TIMEOUT)
                    except TimeoutError:
                        logger.info("closing a stalled stream of %s at index %s", session_id, event.index)
                        await self._close_lagging()
                        return
                    if event.type in TERMINAL_SESSION_EVENTS:
                        await self.close(CLOSE_NORMAL)
                        return
                    if follower.caught_up and follower.head - event.index > LAG_LIMIT:
                        logger.info("closing a lagging stream of %s at index %s", session_id, event.index)
                        await self._close_lagging()
                        return
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("stream of %s failed", session_id)
            with contextlib.suppress(Exception):
                await self.close(CLOSE_SERVER_ERROR, "stream failed")
