"""``GET /<slug>/v1/session/:id/stream?startIndex=N``: the session's events as NDJSON or SSE.

One JSON record per line (``Event.as_record()``), replayed from the table from
``startIndex`` and then live, ending after ``session.completed`` /
``session.failed`` and staying open otherwise (``session.waiting`` included).

A client whose ``Accept`` names ``text/event-stream`` gets Server-Sent Events instead:
each record is one event with ``id:`` its index, ``event:`` its type and ``data:`` the
same JSON, so ``Last-Event-ID`` (which browsers' EventSource sends by itself when it
reconnects) resumes right after that index; an idle SSE stream sends a ``: ping``
comment every ``STREAM_HEARTBEAT_SECONDS``, and an NDJSON one the line
``{"type":"heartbeat"}`` if it asked (``?heartbeat=1``). A reconnect to a log that
ended before that point is 204, which tells EventSource to stop reconnecting.

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
import functools
import logging
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal

from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from agent_platform import rls
from agent_platform.auth import caller
from agent_platform.body_limit import ASGIApp, Message, Receive, Scope, Send
from agent_platform.errors import ApiError
from agent_platform.handlers import running_slot, whose_request
from agents.events import EventType
from sessions_app import stream_quota
from sessions_app.api.base import NON_NEGATIVE_INT, SessionView, non_negative_int
from sessions_app.eventlog import ended_before
from sessions_app.models import Event
from sessions_app.stream_quota import StreamSlot
from sessions_app.streams import SessionFollower, record_json

logger = logging.getLogger(__name__)

NDJSON = "application/x-ndjson"
SSE = "text/event-stream"
Format = Literal["ndjson", "sse"]
# What an idle stream sends every STREAM_HEARTBEAT_SECONDS: an SSE comment (EventSource
# ignores it), and for NDJSON, only when asked, a line no event record looks like.
HEARTBEATS: dict[Format, bytes] = {"ndjson": b'{"type":"heartbeat"}\n', "sse": b": ping\n\n"}

StreamedEvent = inline_serializer(
    "StreamedEvent",
    {
        "type": serializers.ChoiceField(choices=[event_type.value for event_type in EventType]),
        "index": serializers.IntegerField(),
        "sessionId": serializers.CharField(),
        "turnId": serializers.CharField(required=False),
        "at": serializers.DateTimeField(),
        "data": serializers.DictField(),
    },
)


def _sse_event(event: Event) -> str:
    return f"id: {event.index}\nevent: {event.type}\ndata: {record_json(event)}\n\n"


def _encode(batch: list[Event], form: Format) -> bytes:
    """The batch as NDJSON lines or SSE events, emptying the list: an idle stream keeps no
    events while it waits. An empty batch is a heartbeat."""
    if not batch:
        return HEARTBEATS[form]
    if form == "sse":
        chunk = "".join(_sse_event(event) for event in batch).encode()
    else:
        chunk = "".join(record_json(event) + "\n" for event in batch).encode()
    batch.clear()
    return chunk


async def stream_chunks(
    session_id: str,
    start_index: int,
    slot: StreamSlot,
    form: Format = "ndjson",
    heartbeat: bool = False,
    gate: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
) -> AsyncIterator[bytes]:
    """Each event from ``start_index`` on, as one line of JSON or one SSE event, until the
    session ends; the events of one read of the table go out in one chunk, and with
    ``heartbeat`` an idle stream sends ``HEARTBEATS[form]`` every STREAM_HEARTBEAT_SECONDS.
    ``slot`` is the stream's place in its tenant's open-streams quota, given back when the
    stream ends; ``gate``, what each read waits for first (``SessionFollower``)."""
    follower = SessionFollower(session_id, start_index, heartbeat=heartbeat, gate=gate)
    async with stream_quota.holding(slot), follower:
        async for batch in follower.batches():
            yield _encode(batch, form)  # not kept in a local: the generator holds no chunk while idle


# The scope key under which ``detached_streams`` offers to serve a stream.
DETACHED = "platform.detached_stream"


@dataclass
class Handoff:
    """What the view tells ``detached_streams`` to serve (None: nothing, Django answers)."""

    session_id: str | None = None
    start_index: int = 0
    form: Format = "ndjson"
    heartbeat: bool = False
    slot: StreamSlot | None = None
    # The view's row-level security scope (its caller's tenant): the events are read in it.
    scope: str = rls.NOBODY


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield  # an empty async generator: the events follow from ``detached_streams``


async def _cancel_on_disconnect(receive: Receive, serving: asyncio.Task[Any]) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    serving.cancel()


async def _serve(handoff: Handoff, whose: Hashable, receive: Receive, send: Send) -> None:
    """The stream's events, sent from this task until the session ends or the client
    goes away (one small task waits for the disconnect and cancels this one). Its reads
    take the web process's running slots as ``whose`` (its caller), as requests do."""
    serving = asyncio.current_task()
    assert serving is not None and handoff.session_id is not None and handoff.slot is not None
    session_id = handoff.session_id
    gate = functools.partial(running_slot, whose)
    chunks = stream_chunks(session_id, handoff.start_index, handoff.slot, handoff.form, handoff.heartbeat, gate)
    watcher = asyncio.ensure_future(_cancel_on_disconnect(receive, serving))
    try:
        if handoff.heartbeat:
            # An empty chunk makes daphne send the headers now: a client that waits for
            # heartbeats knows at once that the stream is open.
            await send({"type": "http.response.body", "body": b"", "more_body": True})
        async for chunk in chunks:
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
        serving = taken and not gone and handoff.session_id is not None and handoff.slot is not None
        whose = whose_request(scope) if serving else None  # only a stream needs it, not every request
        del scope, django_receive, django_send  # not held while the stream is open
        if serving:
            with rls.scope_of(handoff.scope):
                await _serve(handoff, whose, receive, send)
        elif handoff.slot is not None:
            await asyncio.to_thread(stream_quota.release, handoff.slot)  # the stream never started

    return outermost


def wants_sse(request: Request) -> bool:
    """Whether the ``Accept`` header names ``text/event-stream`` (NDJSON otherwise)."""
    accepted = request.headers.get("Accept", "")
    return any(part.split(";", 1)[0].strip().lower() == SSE for part in accepted.split(","))


def _last_event_id(request: Request) -> int | None:
    """The ``Last-Event-ID`` header as an index (None when absent or empty).

    Raises:
        ApiError: 400 ``invalid`` for anything but a non-negative integer.
    """
    raw = request.headers.get("Last-Event-ID", "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()):
        raise ApiError(400, "invalid", f"Last-Event-ID must be an event index, not {raw[:40]!r}.")
    return int(raw)


def _flag(request: Request, name: str) -> bool:
    """A query flag: absent, ``0`` or ``false`` is off; ``1`` or ``true`` is on.

    Raises:
        ApiError: 400 ``invalid`` for anything else.
    """
    values = request.query_params.getlist(name)
    if not values:
        return False
    if len(values) > 1 or values[0].lower() not in ("0", "1", "true", "false"):
        raise ApiError(400, "invalid", f"{name} must be given once, as 1, 0, true or false.")
    return values[0].lower() in ("1", "true")


STREAM_DESCRIPTION = (
    "The session's events in index order: the replay from startIndex, then live events. "
    "Ends after session.completed or session.failed; stays open otherwise.\n\n"
    "NDJSON (the default): one event record per line. With `heartbeat=1`, an idle stream also "
    'sends the line `{"type":"heartbeat"}` (not an event: it has no index) every 15 s.\n\n'
    "Server-Sent Events when `Accept` names `text/event-stream`: each record is one SSE event, "
    "`id:` its index, `event:` its type, `data:` the record's JSON; an idle stream sends the "
    "comment `: ping` every 15 s. `Last-Event-ID` (sent by EventSource when it reconnects) wins "
    "over startIndex: the stream starts right after that index. 204 when that point is past the "
    "session's end (EventSource then stops reconnecting)."
)


class SessionStreamView(SessionView):
    """``GET /<slug>/v1/session/:id/stream``: NDJSON or SSE, replay from ``startIndex`` then live."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[BaseRenderer, str]:
        # Clients ask for NDJSON or SSE; errors are still the JSON envelope.
        renderer, media_type = super().perform_content_negotiation(request, force=True)
        return renderer, media_type

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "startIndex",
                NON_NEGATIVE_INT,
                description="First index to send (default 0); past the end waits for it.",
            ),
            OpenApiParameter(
                "heartbeat",
                {"type": "string", "enum": ["1", "0", "true", "false"]},
                description='NDJSON only: send {"type":"heartbeat"} every 15 s while idle (SSE always pings).',
            ),
            OpenApiParameter(
                "Last-Event-ID",
                NON_NEGATIVE_INT,
                location=OpenApiParameter.HEADER,
                description="Resume right after this index (wins over startIndex).",
            ),
        ],
        responses={
            (200, NDJSON): OpenApiResponse(StreamedEvent, description=STREAM_DESCRIPTION),
            (200, SSE): OpenApiResponse(
                {"type": "string"},
                description="id: <index>\nevent: <type>\ndata: <the event record as JSON>, one per event.",
            ),
            204: OpenApiResponse(description="SSE resume past the end of an ended session: nothing will follow."),
        },
    )
    def get(self, request: Request, agent_slug: str, session_id: str) -> HttpResponseBase:
        session = self.session
        start = non_negative_int(request, "startIndex", 0)
        after = _last_event_id(request)
        if after is not None:
            start = after + 1
        form: Format = "sse" if wants_sse(request) else "ndjson"
        heartbeat = _flag(request, "heartbeat") or form == "sse"
        if form == "sse" and start > 0 and ended_before(session.pk, start):
            return HttpResponse(status=204)  # EventSource stops reconnecting on 204
        content_type = SSE if form == "sse" else NDJSON
        # 429 at the tenant's cap. The caller's tenant is in hand already (its token's
        # principal); only dev mode's anonymous caller may stream another tenant's session.
        user = caller(request)
        tenant = user.tenant if user.tenant.pk == session.tenant_id else session.tenant
        slot = stream_quota.open_stream(tenant)
        handoff = getattr(request, "scope", {}).get(DETACHED)
        if isinstance(handoff, Handoff):
            handoff.session_id, handoff.start_index, handoff.scope = session.pk, start, rls.current()
            handoff.form, handoff.heartbeat, handoff.slot = form, heartbeat, slot
            response = StreamingHttpResponse(_nothing(), content_type=content_type)
        else:
            response = StreamingHttpResponse(
                stream_chunks(session.pk, start, slot, form, heartbeat), content_type=content_type
            )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


# Checked by DRF on the request's thread; the stream itself is served from the event
# loop (agent_platform.handlers lets that thread go once the response streams).
session_stream = SessionStreamView.as_view()
