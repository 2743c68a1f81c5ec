"""An ASGI guard that refuses HTTP bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` with 413.

Django's ASGI handler reads a whole body into a temporary file before any view runs and
checks its size only when the view asks; DRF trusts ``Content-Length``, reading nothing
without one and a stream with one. This guard sits in front of both:

- a declared length over the cap is answered at once, before the body is read;
- a declared length within it passes through, counted, and is cut off past the cap (the
  application then sees an aborted request and answers nothing; the guard sends 413);
- a body without a declared length (``Transfer-Encoding: chunked``) is read here, up to
  the cap, and handed on with its true ``Content-Length``, so the view parses what was
  sent rather than an empty body (an empty one, a GET's, is handed on as it came).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from django.conf import settings

Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOO_LARGE = json.dumps({"error": "body_too_large", "message": "The request body is too large."}).encode()
# Deployment uploads (an archive, streamed to disk by the view) may be larger than JSON bodies.
DEPLOYMENT_UPLOAD = re.compile(r"/api/v1/agents/[^/]+/deployments/?")
# Room for a multipart form's own lines around the archive.
MULTIPART_ROOM = 64 * 1024


def body_limit_for(path: str) -> int | None:
    """The largest body a request to ``path`` may carry: ``PLATFORM_DEPLOY_MAX_BYTES`` for a
    deployment upload, ``DATA_UPLOAD_MAX_MEMORY_SIZE`` for everything else."""
    if DEPLOYMENT_UPLOAD.fullmatch(path):
        from agent_platform.conf import platform_settings

        return int(platform_settings.DEPLOY_MAX_BYTES) + MULTIPART_ROOM
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return None if limit is None else int(limit)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_too_large(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(TOO_LARGE)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": TOO_LARGE})


class BodyLimit:
    """Wraps an ASGI application; only ``http`` scopes are touched."""

    def __init__(self, app: ASGIApp, limit: int | None = None) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit if self.limit is not None else body_limit_for(scope.get("path", ""))
        if limit is None:
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await _send_too_large(send)
            return
        if declared is None:
            await self._buffered(scope, receive, send, limit)
            return
        received, overflowed, started = 0, False, False

        async def counted_receive() -> Message:
            nonlocal received, overflowed
            if overflowed:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    overflowed = True
                    return {"type": "http.disconnect"}  # the app stops reading and answers nothing
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, counted_receive, watched_send)
        if overflowed and not started:
            await _send_too_large(send)

    async def _buffered(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            size += len(message.get("body", b""))
            if size > limit:
                await _send_too_large(send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:  # without one (a GET, say) no length reads as empty: the scope stays as it is
            kept = scope.get("headers", [])
            headers = [(name, value) for name, value in kept if name.lower() != b"transfer-encoding"]
            scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # the application waits here for a disconnect
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)
