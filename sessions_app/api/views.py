"""Session routes under ``/<slug>/v1/``: reading sessions and their event logs.

Every route checks ownership the same way: an unknown session is 404, a session
of another principal (same tenant or not) is 403 with no detail.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agents.api.views import served_agent
from sessions_app.access import NotSessionOwner, SessionNotFound, owned_session
from sessions_app.api.serializers import SessionSerializer
from sessions_app.eventlog import read_events
from sessions_app.models import Session

MAX_SESSIONS_LISTED = 200


def owned_session_or_error(request: Request, agent_slug: str, session_id: str) -> Session:
    """The caller's session on this agent.

    Raises:
        ApiError: 404 for an unknown agent or session, 403 for another principal's
            session, 503 for an agent that is not served.
    """
    agent, _ = served_agent(request, agent_slug)
    try:
        return owned_session(agent, session_id, caller(request).principal)
    except SessionNotFound:
        raise ApiError(404, "session_not_found", f"No session {session_id!r} on this agent.") from None
    except NotSessionOwner:
        raise ApiError(403, "forbidden", "You do not own this session.") from None


def non_negative_int(request: Request, name: str, default: int, maximum: int | None = None) -> int:
    """A query parameter that must be a non-negative integer.

    Raises:
        ApiError: 400 ``invalid`` for anything else.
    """
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit():
        raise ApiError(400, "invalid", f"{name} must be a non-negative integer, not {raw!r}.")
    value = int(raw)
    return min(value, maximum) if maximum is not None else value


class SessionListView(APIView):
    """``GET /<slug>/v1/sessions``: the caller's sessions on this agent, newest first."""

    @extend_schema(
        parameters=[OpenApiParameter("limit", int, description=f"At most {MAX_SESSIONS_LISTED}.")],
        responses=inline_serializer("SessionList", {"sessions": SessionSerializer(many=True)}),
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        agent, _ = served_agent(request, agent_slug)
        limit = non_negative_int(request, "limit", 50, MAX_SESSIONS_LISTED)
        sessions = Session.objects.select_related("agent").filter(agent=agent, principal=caller(request).principal)
        return Response({"sessions": SessionSerializer(sessions[:limit], many=True).data})


class SessionDetailView(APIView):
    """``GET /<slug>/v1/session/:id``: the session's state."""

    @extend_schema(responses=SessionSerializer)
    def get(self, request: Request, agent_slug: str, session_id: str) -> Response:
        session = owned_session_or_error(request, agent_slug, session_id)
        return Response(SessionSerializer(session).data)


class SessionEventsView(APIView):
    """``GET /<slug>/v1/session/:id/events``: the log so far, in index order."""

    @extend_schema(
        parameters=[OpenApiParameter("startIndex", int, description="First index to return (default 0).")],
        responses=inline_serializer(
            "EventDump",
            {"sessionId": serializers.CharField(), "events": serializers.ListField(child=serializers.DictField())},
        ),
    )
    def get(self, request: Request, agent_slug: str, session_id: str) -> Response:
        session = owned_session_or_error(request, agent_slug, session_id)
        start = non_negative_int(request, "startIndex", 0)
        events = [event.as_record() for event in read_events(session.pk, start)]
        return Response({"sessionId": session.pk, "events": events})
