"""``POST /<slug>/v1/tools/:name``: run a server tool directly, with no model turn."""

from __future__ import annotations

import time

from asgiref.sync import async_to_sync
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import AuthenticatedPrincipal, caller
from agent_platform.errors import ApiError
from agents.api.views import ToolDetailView
from agents.models import Agent
from agents.runtime.conversation import new_call_id
from agents.runtime.tool_calls import CallResult, run_server_tool, validate_arguments
from agents.sdk import SessionInfo, ToolContext
from sessions_app import services
from sessions_app.access import owned_session
from sessions_app.api.base import ERROR
from sessions_app.api.serializers import StrictCharField
from sessions_app.host import host_for, host_for_agent, session_info
from sessions_app.models import Session
from sessions_app.scheduling import ACTIVE_TURNS


class ToolCallBody(serializers.Serializer[None]):
    input = serializers.DictField(required=False, default=dict, help_text="The tool's arguments.")
    sessionId = StrictCharField(required=False, trim_whitespace=False)
    continuationToken = StrictCharField(required=False, trim_whitespace=False)


class ToolCallResult(serializers.Serializer[None]):
    ok = serializers.BooleanField()
    toolName = serializers.CharField()
    callId = serializers.CharField()
    isError = serializers.BooleanField()
    result = serializers.JSONField()
    durationMs = serializers.IntegerField()


def _session(agent: Agent, user: AuthenticatedPrincipal, body: dict[str, str]) -> Session | None:
    """The session the call is bound to, by id or by continuation token, if any."""
    if body.get("sessionId"):
        return owned_session(agent, body["sessionId"], user)
    if body.get("continuationToken"):
        return services.session_for_token(body["continuationToken"], agent, user)
    return None


class ToolView(ToolDetailView):
    """``GET`` describes the tool; ``POST {input, sessionId?, continuationToken?}`` runs it.

    Bound to a session, a write-effect call waits for no turn: while one is active it is
    409 ``session_busy``; a read-effect call runs beside the turn.
    """

    @extend_schema(
        operation_id="agent_tool_call",
        request=ToolCallBody,
        responses={200: ToolCallResult, 400: ERROR, 403: ERROR, 404: ERROR, 409: ERROR},
    )
    def post(self, request: Request, agent_slug: str, tool_name: str) -> Response:
        agent, surface = self.agent, self.surface
        entry = surface.tools.get(tool_name)
        if entry is None:
            available = ", ".join(sorted(surface.tools)) or "none"
            raise ApiError(404, "tool_not_found", f"No tool {tool_name!r}. Available: {available}.")
        tool = entry.value
        body = ToolCallBody(data=request.data)
        body.is_valid(raise_exception=True)
        if tool.execution == "agent":
            raise ApiError(400, "agent_tool", f"{tool_name} runs in a session workspace; only a turn can call it.")
        user = caller(request)
        session = _session(agent, user, body.validated_data)
        busy = session is not None and session.turns.filter(status__in=ACTIVE_TURNS).exists()
        if busy and tool.effect == "write":
            raise ApiError(409, "session_busy", f"{tool_name} writes, and a turn is running in this session.")
        arguments = validate_arguments(tool, body.validated_data["input"])
        if isinstance(arguments, CallResult):
            raise ApiError(400, "invalid", arguments.output["error"])
        call_id = new_call_id()
        started = time.monotonic()
        if session is not None and session.dry_run and tool.effect == "write":
            stub = {"stubbed": True, "toolName": tool_name, "args": body.validated_data["input"]}
            result = CallResult(stub, stubbed=True)
        else:
            principal = user.principal
            info = session_info(session) if session is not None else SessionInfo(id="", agent=agent.slug)
            host = host_for(session) if session is not None else host_for_agent(principal.tenant_id, agent)
            ctx = ToolContext(session=info, host=host, call_id=call_id)
            result = async_to_sync(run_server_tool)(tool, arguments, ctx)
        return Response(
            {
                "ok": not result.is_error,
                "toolName": tool_name,
                "callId": call_id,
                "isError": result.is_error,
                "result": result.output,
                "durationMs": int((time.monotonic() - started) * 1000),
            }
        )
