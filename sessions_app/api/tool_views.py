"""``POST /<slug>/v1/tools/:name``: run a server tool directly, with no model turn
(the rules are ``sessions_app.direct_calls``'s)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import AuthenticatedPrincipal, caller
from agent_platform.errors import ApiError
from agents.api.views import ToolDetailView
from agents.discovery import AgentSurface, extension_context
from agents.models import Agent
from sessions_app import services
from sessions_app.access import owned_session
from sessions_app.api.base import ERROR
from sessions_app.api.serializers import StrictCharField
from sessions_app.channel_state import MAX_TOKEN_CHARS
from sessions_app.direct_calls import call_directly, find_tool
from sessions_app.logs import agent_log_tags
from sessions_app.models import Session


class ToolCallBody(serializers.Serializer[None]):
    input = serializers.DictField(required=False, default=dict, help_text="The tool's arguments.")
    sessionId = StrictCharField(required=False, trim_whitespace=False)
    continuationToken = StrictCharField(
        required=False, trim_whitespace=False, max_length=MAX_TOKEN_CHARS, help_text="ct_... or channel:key"
    )


class ToolCallResult(serializers.Serializer[None]):
    ok = serializers.BooleanField()
    toolName = serializers.CharField()
    callId = serializers.CharField()
    isError = serializers.BooleanField()
    result = serializers.JSONField()
    durationMs = serializers.IntegerField()


def _session(agent: Agent, surface: AgentSurface, user: AuthenticatedPrincipal, body: dict[str, str]) -> Session | None:
    """The session the call is bound to, by id or by continuation token (the HTTP API's
    opaque one, or a channel's ``channel:key``), if any.

    Raises:
        ApiError: 400 when both ``sessionId`` and ``continuationToken`` are given.
    """
    session_id, token = body.get("sessionId"), body.get("continuationToken")
    if session_id and token:
        raise ApiError(400, "invalid", "Give sessionId or continuationToken, not both.")
    if session_id:
        return owned_session(agent, session_id, user)
    if token:
        return services.session_for_any_token(token, agent, surface, user)
    return None


class ToolView(ToolDetailView):
    """``GET`` describes the tool; ``POST {input, sessionId?, continuationToken?}`` runs it
    (``continuationToken``: the opaque ``ct_...`` one, or a channel session's ``channel:key``).

    Bound to a session, a write-effect call waits for no turn: while one is active it is
    409 ``session_busy``; a read-effect call runs beside the turn. A call that needs a
    person's approval for its arguments is 409 ``approval_required``: only a turn can ask.
    """

    @extend_schema(
        operation_id="agent_tool_call",
        request=ToolCallBody,
        responses={200: ToolCallResult, 400: ERROR, 403: ERROR, 404: ERROR, 409: ERROR},
    )
    def post(self, request: Request, agent_slug: str, tool_name: str) -> Response:
        tool = find_tool(self.surface, tool_name)
        body = ToolCallBody(data=request.data)
        body.is_valid(raise_exception=True)
        user = caller(request)
        session = _session(self.agent, self.surface, user, body.validated_data) if tool.execution != "agent" else None
        # What the tool logs is the agent's, on its /v1/logs, as in a turn.
        session_id = session.pk if session is not None else ""
        tenant_id = user.principal.tenant_id
        with agent_log_tags(self.surface, agent_slug=self.agent.slug, tenant_id=tenant_id, session_id=session_id):
            call = call_directly(
                self.agent,
                tool,
                user.principal,
                session,
                body.validated_data["input"],
                extension=extension_context(self.surface.extensions, self.surface.tools[tool_name].extension),
            )
        return Response(call.as_dict())
