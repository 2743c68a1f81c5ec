"""``GET /<slug>/v1/session/:id/stream?startIndex=N``: the session's events as NDJSON.

One JSON record per line (``Event.as_record()``), replayed from the table from
``startIndex`` and then live, ending after ``session.completed`` /
``session.failed`` and staying open otherwise (``session.waiting`` included).

Authentication, ownership and ``startIndex`` are checked by an ordinary DRF view,
so errors are the same ``{"error", "message"}`` JSON with the same statuses as the
other session routes (401, 403 with no detail, 404, 400). The stream itself is an
async generator over ``SessionFollower``, in the event loop (no thread is held while
it streams), which reads the table in batches and never queues more than one.

Most streams sit idle for hours, so once the view has authorised one, it is not
served through Django at all: ``detached_streams``, the outermost ASGI layer of HTTP,
sends the view's response headers and then the events itself, after Django is done
with the request (its request, response and middleware state, a thread-local
connection: about half of what an open stream would otherwise hold). The view hands
the stream over through the scope, like ``X-Accel-Redirect`` hands a download to a
proxy. Without that layer (another entry point), the view streams the same lines
through Django.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from agent_platform import rls
from agent_platform.body_limit import ASGIApp, Message, Receive, Scope, Send
from sessions_app.api.base import NON_NEGATIVE_INT, SessionView, non_negative_int
from sessions_app.models import Event
from sessions_app.streams import SessionFollower, record_json

logger = logging.getLogger(__name__)

NDJSON = "application/x-ndjson"

StreamedEvent = inline_serializer(
    "StreamedEvent",
    {
        "type": serializers.CharField(),
        "index": serializers.IntegerField(),
        "sessionId": serializers.CharField(),
        "turnId": serializers.CharField(required=False),
        "at": serializers.DateTimeField(),
        "data": serializers.DictField(),
    },
)


def _lines(batch: list[Event]) -> bytes:
    """The batch as NDJSON, emptying the list: an idle stream keeps no events while it waits."""
    chunk = "".join(record_json(event) + "\n" for event in batch).encode()
    batch.clear()
    return chunk


async def ndjson_lines(session_id: str, start_index: int) -> AsyncIterator[bytes]:
    """Each event from ``start_index`` on as one line of JSON, until the session ends;
    the events of one read of the table go out in one chunk."""
    async with SessionFollower(session_id, start_index) as follower:
        async for batch in follower.batches():
            yield _lines(batch)  # not kept in a local: the generator holds no chunk while idle


# The scope key under which ``detached_streams`` offers to serve a stream.
DETACHED = "platform.detached_stream"


@dataclass
class Handoff:
    """What the view tells ``detached_streams`` to serve (None: nothing, Django answers)."""

    session_id: str | None = None
    start_index: int = 0
    # The view's row-level security scope (its caller's tenant): the events are read in it.
    scope: str = rls.NOBODY


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield  # an empty async generator: the events follow from ``detached_streams``


async def _cancel_on_disconnect(receive: Receive, serving: asyncio.Task[Any]) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    serving.cancel()


async def _serve(session_id: str, start_index: int, receive: Receive, send: Send) -> None:
    """The stream's events, sent from this task until the session ends or the client
    goes away (one small task waits for the disconnect and cancels this one)."""
    serving = asyncio.current_task()
    assert serving is not None
    watcher = asyncio.ensure_future(_cancel_on_disconnect(receive, serving))
    try:
        async for chunk in ndjson_lines(session_id, start_index):
            message = {"type": "http.response.body", "body": chunk, "more_body": True}
            del chunk  # held only until it is written, not while the stream waits
            await send(message)
            del message
    except asyncio.CancelledError:
        if not watcher.done() or watcher.cancelled():
            raise  # cancelled from outside (the server is stopping), not by the disconnect
        serving.uncancel()
        return
    except Exception:
        logger.exception("stream of %s failed", session_id)
    finally:
        watcher.cancel()
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def detached_streams(app: ASGIApp) -> ASGIApp:
    """ASGI middleware, outermost on HTTP: serves the event streams that the stream view
    hands over (see the module docstring); everything else passes through untouched."""

    async def outermost(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        handoff, taken, gone = Handoff(), False, False

        async def django_receive() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def django_send(message: Message) -> None:
            nonlocal taken
            if message["type"] == "http.response.start":
                taken = handoff.session_id is not None and message["status"] == 200
            elif taken and not message.get("more_body", False):
                return  # the end of the view's empty body: the events follow instead
            await send(message)

        await app({**scope, DETACHED: handoff}, django_receive, django_send)
        del scope, django_receive, django_send  # not held while the stream is open
        if taken and not gone and handoff.session_id is not None:
            with rls.scope_of(handoff.scope):
                await _serve(handoff.session_id, handoff.start_index, receive, send)

    return outermost


class SessionStreamView(SessionView):
    """``GET /<slug>/v1/session/:id/stream``: NDJSON, replay from ``startIndex`` then live."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[BaseRenderer, str]:
        # Clients ask for NDJSON; errors are still the JSON envelope.
        renderer, media_type = super().perform_content_negotiation(request, force=True)
        return renderer, media_type

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "startIndex",
                NON_NEGATIVE_INT,
                description="First index to send (default 0); past the end waits for it.",
            )
        ],
        responses={
            (200, NDJSON): OpenApiResponse(
                StreamedEvent,
                description=(
                    "One event record per line, in index order: the replay from startIndex, then live events. "
                    "Ends after session.completed or session.failed; stays open otherwise."
                ),
            )
        },
    )
    def get(self, request: Request, agent_slug: str, session_id: str) -> StreamingHttpResponse:
        session = self.session
        start = non_negative_int(request, "startIndex", 0)
        handoff = getattr(request, "scope", {}).get(DETACHED)
        if isinstance(handoff, Handoff):
            handoff.session_id, handoff.start_index, handoff.scope = session.pk, start, rls.current()
            response = StreamingHttpResponse(_nothing(), content_type=NDJSON)
        else:
            response = StreamingHttpResponse(ndjson_lines(session.pk, start), content_type=NDJSON)
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


# Checked by DRF on the request's thread; the stream itself is served from the event
# loop (agent_platform.handlers lets that thread go once the response streams).
session_stream = SessionStreamView.as_view()
