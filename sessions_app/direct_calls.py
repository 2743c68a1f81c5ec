"""A server tool called directly, with no model turn: ``POST /<slug>/v1/tools/:name``
(and every passthrough to it, such as the MCP endpoint's ``call_tool``).

The same rules hold as for a model's call, except that nobody is there to approve:

- a call whose ``needs_approval`` holds for its arguments is refused (409
  ``approval_required``); a person approves it only inside a session's turn;
- bound to a session, a write-effect call waits for no turn (409 ``session_busy``
  while one is active), a read-effect one runs beside it, and a dry-run session gets
  a stub for a write-effect call;
- every call bound to a session is recorded in that session's log, as a model's call
  is: ``actions.requested`` (with ``"direct": true``) before it runs, then its
  ``action.result``, both with no ``turnId``. The log is what owners, streams and hooks
  (audit hooks among them) read, so a direct call is seen where every other call is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from django.utils import timezone

from agent_platform.errors import DomainError
from agent_platform.models import Principal
from agents import events
from agents.discovery import AgentSurface
from agents.events import EventType
from agents.models import Agent
from agents.registry import surface_for
from agents.runtime.conversation import new_call_id
from agents.runtime.tool_calls import CallResult, needs_approval, run_server_tool, validate_arguments
from agents.sdk import ExtensionContext, SessionInfo, Tool, ToolContext
from agents.secrets import declared_secrets
from agents.telemetry import running_in
from sessions_app.channel_state import channel_info
from sessions_app.eventlog import NewEvent, append_events
from sessions_app.host import host_for, host_for_agent, session_info
from sessions_app.models import Session
from sessions_app.records.artifacts import SessionArtifacts
from sessions_app.scheduling import ACTIVE_TURNS
from sessions_app.services import SessionBusy
from sessions_app.telemetry import direct_turn_id, export_direct_call


class ToolNotFound(DomainError):
    status, code = 404, "tool_not_found"


class AgentExecutionTool(DomainError):
    status, code = 400, "agent_tool"


class InvalidArguments(DomainError):
    status, code = 400, "invalid"


class ApprovalRequired(DomainError):
    status, code = 409, "approval_required"


@dataclass(frozen=True)
class DirectCall:
    call_id: str
    tool_name: str
    result: CallResult
    duration_ms: int

    def as_dict(self) -> dict[str, Any]:
        """The ``POST /v1/tools/:name`` answer."""
        return {
            "ok": not self.result.is_error,
            "toolName": self.tool_name,
            "callId": self.call_id,
            "isError": self.result.is_error,
            "result": self.result.output,
            "durationMs": self.duration_ms,
        }


def find_tool(surface: AgentSurface, tool_name: str) -> Tool:
    """The agent's tool of this name.

    Raises:
        ToolNotFound: no such tool; the message lists the available names.
    """
    entry = surface.tools.get(tool_name)
    if entry is None:
        available = ", ".join(sorted(surface.tools)) or "none"
        raise ToolNotFound(f"No tool {tool_name!r}. Available: {available}.")
    return entry.value


def call_directly(
    agent: Agent,
    tool: Tool,
    principal: Principal,
    session: Session | None,
    raw_input: dict[str, Any],
    *,
    extension: ExtensionContext | None = None,
) -> DirectCall:
    """Run ``tool`` with ``raw_input`` for ``principal``, bound to ``session`` if given
    (the caller has checked that the principal may use it). ``extension``: the tool's
    ``ctx.extension`` when a mount contributed it (``extension_context``).

    Raises:
        AgentExecutionTool: the tool runs in a session workspace; only a turn can call it.
        SessionBusy: a write-effect call while a turn is active in the session.
        InvalidArguments: the input does not match the tool's schema.
        ApprovalRequired: the tool needs a person's approval for these arguments.
    """
    if tool.execution == "agent":
        raise AgentExecutionTool(f"{tool.name} runs in a session workspace; only a turn can call it.")
    busy = session is not None and session.turns.filter(status__in=ACTIVE_TURNS).exists()
    if busy and tool.effect == "write":
        raise SessionBusy(f"{tool.name} writes, and a turn is running in this session.")
    arguments = validate_arguments(tool, raw_input)
    if isinstance(arguments, CallResult):
        raise InvalidArguments(arguments.output["error"])
    if needs_approval(tool, raw_input):
        raise ApprovalRequired(
            f"{tool.name} needs a person's approval for these arguments, which a direct call cannot ask for; "
            "ask for it in a session (a message that makes the model call it), then approve the call."
        )
    call_id = new_call_id()
    started, begun = time.monotonic(), timezone.now()
    if session is not None:
        requested = events.actions_requested([(call_id, tool.name, raw_input)])
        append_events(session.pk, [NewEvent(EventType.ACTIONS_REQUESTED, {**requested, "direct": True})])
    if session is not None and session.dry_run and tool.effect == "write":
        result = CallResult({"stubbed": True, "toolName": tool.name, "args": raw_input}, stubbed=True)
    else:
        info = session_info(session) if session is not None else SessionInfo(id="", agent=agent.slug)
        host = host_for(session) if session is not None else host_for_agent(principal.tenant_id, agent)
        channel = channel_info(session) if session is not None else None
        artifacts = SessionArtifacts(session) if session is not None else None
        ctx = ToolContext(
            session=info,
            host=host,
            artifacts=artifacts,
            secrets=declared_secrets(agent, surface_for(agent).config.secrets),
            call_id=call_id,
            channel=channel,
            extension=extension,
        )
        with running_in(direct_turn_id(call_id), call_id):  # ctx.host.otel.set_attributes: this call's span
            result = async_to_sync(run_server_tool)(tool, arguments, ctx)
    if session is not None:
        data = events.action_result(call_id, tool.name, result.output, is_error=result.is_error, stubbed=result.stubbed)
        append_events(session.pk, [NewEvent(EventType.ACTION_RESULT, data)])
    export_direct_call(agent, session, (call_id, tool.name, raw_input), result, (begun, timezone.now()))
    return DirectCall(call_id, tool.name, result, int((time.monotonic() - started) * 1000))
