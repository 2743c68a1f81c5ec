"""Session routes under ``/<slug>/v1/``: starting and continuing sessions, stopping
turns, deciding approvals, and reading sessions and their event logs.

The agent and the session are resolved by the base views (``sessions_app.api.base``),
with one ownership rule for every route: an unknown session is 404, a session of
another principal (same tenant or not) is 403 with no detail.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import caller
from agent_platform.conf import platform_settings
from agent_platform.errors import ApiError
from agents.api.base import AgentView
from sessions_app import approvals, forks, services
from sessions_app.access import SessionNotFound, visible_sessions
from sessions_app.api.base import ERROR, NON_NEGATIVE_INT, SessionView, non_negative_int
from sessions_app.api.idempotency import IDEMPOTENCY_KEY, idempotent
from sessions_app.api.serializers import (
    CreateSessionBody,
    DecisionBody,
    FollowUpBody,
    ForkBody,
    Forked,
    SessionSerializer,
    TurnAccepted,
    with_first_message,
)
from sessions_app.channel_state import InvalidContinuationToken
from sessions_app.eventlog import read_events
from sessions_app.models import Session, SessionPurpose, Turn

MAX_SESSIONS_LISTED = 200
# One answer of /events holds at most this many events; a longer log is read page by page.
EVENTS_PAGE = 1000
MAX_EVENTS_PAGE = 10_000


class SessionListView(AgentView):
    """``GET /<slug>/v1/sessions``: the caller's sessions on this agent, newest first."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "limit", NON_NEGATIVE_INT, description=f"Default 50; a larger value means {MAX_SESSIONS_LISTED}."
            ),
            OpenApiParameter(
                "purpose", str, enum=["live", "eval"], description="Default live: eval sessions stay out."
            ),
        ],
        responses=inline_serializer("SessionList", {"sessions": SessionSerializer(many=True)}),
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        limit = non_negative_int(request, "limit", 50, MAX_SESSIONS_LISTED)
        sessions = visible_sessions(Session.objects.select_related("agent").filter(agent=self.agent), caller(request))
        # Eval sessions stay out of the list unless asked for (``?purpose=eval``).
        purpose = request.query_params.get("purpose")
        if purpose not in (None, SessionPurpose.LIVE, SessionPurpose.EVAL):
            raise ApiError(400, "invalid_request", "purpose must be live or eval.")
        sessions = with_first_message(sessions.filter(purpose=purpose or SessionPurpose.LIVE))
        return Response({"sessions": SessionSerializer(sessions[:limit], many=True).data})


class SessionDetailView(SessionView):
    """``GET /<slug>/v1/session/:id``: the session's state."""

    @extend_schema(responses=SessionSerializer)
    def get(self, request: Request, agent_slug: str, session_id: str) -> Response:
        return Response(SessionSerializer(self.session).data)


class SessionEventsView(SessionView):
    """``GET /<slug>/v1/session/:id/events``: the log so far, in index order, a page at a
    time (a long session's whole history is never read at once)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("startIndex", NON_NEGATIVE_INT, description="First index to return (default 0)."),
            OpenApiParameter(
                "limit",
                NON_NEGATIVE_INT,
                description=f"Events per page (default {EVENTS_PAGE}; a larger value means {MAX_EVENTS_PAGE}).",
            ),
        ],
        responses=inline_serializer(
            "EventDump",
            {
                "sessionId": serializers.CharField(),
                "events": serializers.ListField(child=serializers.DictField()),
                "nextStartIndex": serializers.IntegerField(
                    allow_null=True, help_text="Where the next page starts; null when this page reaches the end."
                ),
            },
        ),
    )
    def get(self, request: Request, agent_slug: str, session_id: str) -> Response:
        start = non_negative_int(request, "startIndex", 0)
        limit = max(1, non_negative_int(request, "limit", EVENTS_PAGE, MAX_EVENTS_PAGE))
        page = read_events(self.session.pk, start, limit + 1)
        more = len(page) > limit
        events = [event.as_record() for event in page[:limit]]
        next_start = events[-1]["index"] + 1 if more else None
        return Response({"sessionId": self.session.pk, "events": events, "nextStartIndex": next_start})


# --- writing: start, follow up, stop, decide ---------------------------------------------------


def _accepted(turn: Turn) -> dict[str, str]:
    # The services set the new continuation token on the session row they hold, which is turn.session.
    session = turn.session
    return {"sessionId": session.pk, "continuationToken": session.continuation_token or "", "turnId": turn.pk}


class SessionCreateView(AgentView):
    """``POST /<slug>/v1/session``: start a session, or continue one with its
    ``continuationToken``. An ``Idempotency-Key`` header replays the first answer."""

    @extend_schema(
        operation_id="session_start",
        request=CreateSessionBody,
        responses={201: TurnAccepted, 400: ERROR, 404: ERROR, 409: ERROR, 413: ERROR},
        parameters=[IDEMPOTENCY_KEY],
    )
    def post(self, request: Request, agent_slug: str) -> Response:
        return idempotent(request, lambda: self._create(request, agent_slug))

    def _create(self, request: Request, agent_slug: str) -> Response:
        body = CreateSessionBody(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        user = caller(request)
        if data.get("continuationToken"):
            try:
                session = services.session_for_any_token(data["continuationToken"], self.agent, self.surface, user)
            except InvalidContinuationToken as error:
                # Here a token that names no session is not found, like an unknown opaque one.
                raise SessionNotFound(str(error)) from None
            turn = services.continue_session(session, message=data["message"], files=data.get("workspaceFiles"))
        else:
            session, turn = services.start_session(
                self.agent,
                self.surface,
                user.principal,
                message=data["message"],
                mode=data["mode"],
                purpose=data["purpose"],
                title=data["title"],
                files=data.get("workspaceFiles"),
                dry_run=data["dryRun"],
                default_model=platform_settings.DEFAULT_MODEL,
            )
        return Response(_accepted(turn), status=201)


class SessionFollowUpView(SessionDetailView):
    """``GET`` the session's state; ``POST`` a follow-up ``{message, admission?}`` (202)."""

    @extend_schema(
        operation_id="session_follow_up",
        request=FollowUpBody,
        responses={202: TurnAccepted, 400: ERROR, 403: ERROR, 404: ERROR, 409: ERROR, 413: ERROR},
        parameters=[IDEMPOTENCY_KEY],
    )
    def post(self, request: Request, agent_slug: str, session_id: str) -> Response:
        return idempotent(request, lambda: self._follow_up(request, agent_slug, session_id))

    def _follow_up(self, request: Request, agent_slug: str, session_id: str) -> Response:
        body = FollowUpBody(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        turn = services.continue_session(
            self.session, message=data["message"], admission=data["admission"], files=data.get("workspaceFiles")
        )
        return Response(_accepted(turn), status=202)


class SessionStopView(SessionView):
    """``POST /<slug>/v1/session/:id/stop``: interrupt the running turn (202)."""

    @extend_schema(
        request=None,
        responses={202: inline_serializer("Stopped", {"stopped": serializers.BooleanField()}), 403: ERROR, 404: ERROR},
    )
    def post(self, request: Request, agent_slug: str, session_id: str) -> Response:
        return Response({"stopped": services.stop_session(self.session)}, status=202)


class SessionForkView(SessionView):
    """``POST /<slug>/v1/session/:id/fork`` ``{atIndex?}``: a new session of the same
    principal starting with a copy of events ``0..atIndex`` (201)."""

    @extend_schema(
        operation_id="session_fork",
        request=ForkBody,
        responses={201: Forked, 400: ERROR, 403: ERROR, 404: ERROR, 413: ERROR},
    )
    def post(self, request: Request, agent_slug: str, session_id: str) -> Response:
        if not isinstance(request.data, dict):
            raise ApiError(400, "invalid", 'The body must be a JSON object: {"atIndex"?: N}.')
        fork = forks.fork_session(self.session, request.data.get("atIndex"))
        return Response({"sessionId": fork.pk, "continuationToken": fork.continuation_token or ""}, status=201)


class ApprovalView(SessionView):
    """``POST /<slug>/v1/session/:id/approvals/:callId`` ``{decision, reason?}``."""

    @extend_schema(
        request=DecisionBody,
        responses={
            200: inline_serializer("Decided", {"callId": serializers.CharField(), "decision": serializers.CharField()}),
            400: ERROR,
            403: ERROR,
            404: ERROR,
            409: ERROR,
        },
    )
    def post(self, request: Request, agent_slug: str, session_id: str, call_id: str) -> Response:
        session = self.session
        body = DecisionBody(data=request.data)
        body.is_valid(raise_exception=True)

        approvals.decide_once_parked(
            session,
            call_id,
            approve=body.validated_data["decision"] == "approve",
            reason=body.validated_data["reason"],
            principal=caller(request).principal,
        )
        return Response({"callId": call_id, "decision": body.validated_data["decision"]})
