"""``GET /<slug>/v1/session/:id/stream?startIndex=N``: the session's events as NDJSON.

One JSON record per line (``Event.as_record()``), replayed from the table from
``startIndex`` and then live, ending after ``session.completed`` /
``session.failed`` and staying open otherwise (``session.waiting`` included).

Authentication, ownership and ``startIndex`` are checked by an ordinary DRF view,
so errors are the same ``{"error", "message"}`` JSON with the same statuses as the
other session routes (401, 403 with no detail, 404, 400). That view runs on the
shared thread pool (not a thread held for the whole stream); the stream itself is
an async generator over ``SessionFollower``, served by the ASGI handler in the
event loop, which reads the table in batches and never queues more than one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from sessions_app.api.views import NON_NEGATIVE_INT, non_negative_int, owned_session_or_error
from sessions_app.streams import SessionFollower, on_pool, record_json

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


async def ndjson_lines(session_id: str, start_index: int) -> AsyncIterator[bytes]:
    """Each event from ``start_index`` on as one line of JSON, until the session ends."""
    async with SessionFollower(session_id, start_index) as follower:
        async for event in follower:
            yield (record_json(event) + "\n").encode()


class SessionStreamView(APIView):
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
        session = owned_session_or_error(request, agent_slug, session_id)
        start = non_negative_int(request, "startIndex", 0)
        response = StreamingHttpResponse(ndjson_lines(session.pk, start), content_type=NDJSON)
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


_checked_stream = on_pool(SessionStreamView.as_view())


async def session_stream(request: HttpRequest, agent_slug: str, session_id: str) -> HttpResponseBase:
    """The route's view: the DRF checks on the shared pool, then the stream in the event loop."""
    response: HttpResponseBase = await _checked_stream(request, agent_slug=agent_slug, session_id=session_id)
    return response


# What DRF's as_view() records, so the schema generator finds the route.
_view: Any = session_stream
_view.cls = SessionStreamView
_view.initkwargs = {}
_view.csrf_exempt = True
_view.login_required = False
