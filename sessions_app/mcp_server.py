"""The agent as an MCP server (DESIGN.md §9.7): the tools of ``/<slug>/v1/mcp`` and
``/<slug>/v1/mcp/tools``, served with the official ``mcp`` package over stateless
streamable HTTP with JSON responses.

Who calls and which agent is decided before a request gets here, by the session API's
own auth (``sessions_app.api.mcp_views``); a ``McpCaller`` rides in the ASGI scope to
the handlers below. The tools are the session services seen through MCP:

- ``ask {message, sessionId?, continuationToken?, waitMs?}`` starts a chat session or
  follows one up (admission ``preempt``), then waits for the turn (``turn_outcomes``);
- ``check {sessionId, waitMs?}`` waits for the session's latest turn;
- ``approve {sessionId, callId, decision, reason?, waitMs?}`` decides a parked call,
  then waits as ``check`` does;
- ``call_tool {name, input}`` is ``POST /v1/tools/:name`` (``direct_calls``), listed
  only when the agent has server tools; ``/v1/mcp/tools`` lists each of them by name.

Every answer is ``structuredContent`` plus the same JSON as one text block; a refusal
(bad arguments, someone else's session, a busy session) is ``isError: true`` with
``{"error", "message", "status"}``, never a JSON-RPC error.

Daphne sends no ASGI lifespan, and the SDK's session manager needs its ``run()`` task
group even when stateless: each event loop starts its managers on its first MCP
request, in a task that lives as long as the loop (``_running_manager``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
from django.db import InterfaceError, OperationalError
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_platform.auth import AuthenticatedPrincipal
from agent_platform.body_limit import Message, Receive, Scope, Send
from agent_platform.conf import platform_settings
from agent_platform.db import on_pool
from agent_platform.errors import DATABASE_UNAVAILABLE, DomainError
from agent_platform.parsers import unstorable_reason
from agents.discovery import AgentSurface, extension_context
from agents.models import Agent
from agents.sdk import Tool
from sessions_app import approvals, services
from sessions_app.access import owned_session
from sessions_app.api.serializers import MAX_MESSAGE_CHARS
from sessions_app.channel_state import MAX_TOKEN_CHARS
from sessions_app.direct_calls import call_directly, find_tool
from sessions_app.logs import agent_log_tags
from sessions_app.models import Admission, Session
from sessions_app.turn_outcomes import TurnOutcome, latest_turn_id, turn_outcome, wait_for_outcome

# How long ask, check and approve wait for the turn, in milliseconds.
DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 120_000
MAX_ID_CHARS = 100

# The scope key the caller rides under, from the view to the tool handlers.
CALLER = "platform.mcp_caller"

Endpoint = Literal["agent", "tools"]


@dataclass(frozen=True)
class McpCaller:
    """Who calls which agent's MCP endpoint, as the session API decided."""

    user: AuthenticatedPrincipal
    agent: Agent
    surface: AgentSurface


class Refused(DomainError):
    """Arguments an MCP tool cannot take."""

    status, code = 400, "invalid"


# --- arguments --------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


WaitMs = Field(
    default=DEFAULT_WAIT_MS,
    ge=0,
    description=f"At most this long (default {DEFAULT_WAIT_MS}, capped at {MAX_WAIT_MS}).",
)


class AskArgs(_Args):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="The user's message.")
    sessionId: str | None = Field(
        default=None, max_length=MAX_ID_CHARS, description="Follow up in this session (interrupts a running turn)."
    )
    continuationToken: str | None = Field(
        default=None, max_length=MAX_TOKEN_CHARS, description="Or follow up by the session's latest token."
    )
    waitMs: int = WaitMs


class CheckArgs(_Args):
    sessionId: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    waitMs: int = WaitMs


class ApproveArgs(_Args):
    sessionId: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    callId: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="A callId of pendingApprovals.")
    decision: Literal["approve", "deny"]
    reason: str = Field(default="", max_length=2000)
    waitMs: int = WaitMs


class CallToolArgs(_Args):
    name: str = Field(min_length=1, description="A server tool of the agent.")
    input: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")


OUTCOME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sessionId": {"type": "string"},
        "continuationToken": {"type": "string"},
        "turnId": {"type": "string"},
        "status": {"type": "string", "enum": ["completed", "failed", "running", "awaiting_approval"]},
        "reply": {"type": "string"},
        "error": {"type": "string"},
        "pendingApprovals": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["sessionId", "continuationToken", "status"],
}

AGENT_TOOLS: dict[str, tuple[type[_Args], str]] = {
    "ask": (
        AskArgs,
        "Send the agent a message (a new chat session, or a follow-up with sessionId or continuationToken) "
        "and wait for its reply; status 'running' means call check later.",
    ),
    "check": (CheckArgs, "Where the session's latest turn stands, waiting for it to finish for at most waitMs."),
    "approve": (
        ApproveArgs,
        "Approve or deny a call listed in pendingApprovals, then wait for the turn as check does.",
    ),
    "call_tool": (CallToolArgs, "Run one of the agent's server tools directly, with no model turn."),
}


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


def server_tools(surface: AgentSurface) -> list[Tool]:
    """The agent's tools a caller may run directly (not those of a session workspace)."""
    return [entry.value for _, entry in sorted(surface.tools.items()) if entry.value.execution != "agent"]


def listed_tools(endpoint: Endpoint, surface: AgentSurface) -> list[types.Tool]:
    """What ``tools/list`` answers on each endpoint."""
    if endpoint == "tools":
        return [
            types.Tool(name=tool.name, title=tool.title, description=tool.description, input_schema=tool.input_schema)
            for tool in server_tools(surface)
        ]
    has_server_tools = bool(server_tools(surface))
    return [
        types.Tool(
            name=name,
            description=description,
            input_schema=_schema(model),
            output_schema=OUTCOME_SCHEMA if name != "call_tool" else None,
        )
        for name, (model, description) in AGENT_TOOLS.items()
        if name != "call_tool" or has_server_tools
    ]


# --- the tools, as plain functions --------------------------------------------------------------


def _wait_seconds(wait_ms: int) -> float:
    return min(wait_ms, MAX_WAIT_MS) / 1000


def _start_or_follow_up(caller: McpCaller, args: AskArgs) -> tuple[Session, str]:
    """The session and the new turn's id, after ``services`` took the message."""
    if args.sessionId and args.continuationToken:
        raise Refused("Give sessionId or continuationToken, not both.")
    user = caller.user
    session: Session | None = None
    if args.sessionId:
        session = owned_session(caller.agent, args.sessionId, user)
    elif args.continuationToken:
        session = services.session_for_any_token(args.continuationToken, caller.agent, caller.surface, user)
    if session is None:
        session, turn = services.start_session(
            caller.agent,
            caller.surface,
            user.principal,
            message=args.message,
            default_model=platform_settings.DEFAULT_MODEL,
        )
        return session, turn.pk
    turn = services.continue_session(session, message=args.message, admission=Admission.PREEMPT)
    return session, turn.pk


def _latest(caller: McpCaller, session_id: str) -> tuple[Session, str]:
    session = owned_session(caller.agent, session_id, caller.user)
    turn_id = latest_turn_id(session)
    if turn_id is None:  # a session always has its first turn; a row made otherwise has none
        raise Refused(f"Session {session_id!r} has no turn yet.", status=409, code="no_turn")
    return session, turn_id


def _decide(caller: McpCaller, args: ApproveArgs) -> tuple[Session, str]:
    session = owned_session(caller.agent, args.sessionId, caller.user)
    approval = approvals.decide_once_parked(
        session,
        args.callId,
        approve=args.decision == "approve",
        reason=args.reason,
        principal=caller.user.principal,
    )
    return session, approval.turn_id


def _call_tool(caller: McpCaller, name: str, raw_input: dict[str, Any]) -> dict[str, Any]:
    """``POST /v1/tools/:name``'s body, for a call bound to no session."""
    tool = find_tool(caller.surface, name)
    tenant_id = caller.user.principal.tenant_id
    with agent_log_tags(caller.surface, agent_slug=caller.agent.slug, tenant_id=tenant_id):
        # A mount's tool reads its config as ctx.extension here too, as over POST /v1/tools/:name.
        extension = extension_context(caller.surface.extensions, caller.surface.tools[name].extension)
        call = call_directly(caller.agent, tool, caller.user.principal, None, raw_input, extension=extension)
        return call.as_dict()


_start_or_follow_up_async = on_pool(_start_or_follow_up)
_latest_async = on_pool(_latest)
_decide_async = on_pool(_decide)
_call_tool_async = on_pool(_call_tool)
_outcome_now = on_pool(turn_outcome)


async def _settled(session: Session, turn_id: str, wait_ms: int) -> dict[str, Any]:
    outcome: TurnOutcome
    if wait_ms <= 0:
        outcome = await _outcome_now(session, turn_id)
    else:
        outcome = await wait_for_outcome(session, turn_id, _wait_seconds(wait_ms))
    return outcome.as_dict()


async def run_agent_tool(caller: McpCaller, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One call of a ``/v1/mcp`` tool: its answer.

    Raises:
        DomainError: what the session API would answer with a 4xx (``Refused`` for
            arguments that do not fit the tool's schema).
    """
    if name not in AGENT_TOOLS or (name == "call_tool" and not server_tools(caller.surface)):
        raise Refused(
            f"No tool {name!r} here. Available: {', '.join(t.name for t in listed_tools('agent', caller.surface))}.",
            status=404,
            code="tool_not_found",
        )
    model = AGENT_TOOLS[name][0]
    try:
        args = model.model_validate(arguments)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors())
        raise Refused(f"Invalid arguments for {name}: {problems}") from None
    if isinstance(args, AskArgs):
        session, turn_id = await _start_or_follow_up_async(caller, args)
        return await _settled(session, turn_id, args.waitMs)
    if isinstance(args, CheckArgs):
        session, turn_id = await _latest_async(caller, args.sessionId)
        return await _settled(session, turn_id, args.waitMs)
    if isinstance(args, ApproveArgs):
        session, turn_id = await _decide_async(caller, args)
        answer = await _settled(session, turn_id, args.waitMs)
        return {**answer, "decision": args.decision, "callId": args.callId}
    assert isinstance(args, CallToolArgs)
    return await _call_tool_async(caller, args.name, args.input)


# --- the MCP protocol side ------------------------------------------------------------------------


def _caller_of(ctx: ServerRequestContext[Any, Any]) -> McpCaller:
    request = ctx.request
    caller = getattr(request, "scope", {}).get(CALLER)
    if not isinstance(caller, McpCaller):
        raise RuntimeError("an MCP request reached the server without its caller (see sessions_app.api.mcp_views)")
    return caller


def _result(body: dict[str, Any], *, is_error: bool = False) -> types.CallToolResult:
    text = json.dumps(body, separators=(",", ":"), default=str)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=body, is_error=is_error
    )


def _refusal(error: DomainError) -> types.CallToolResult:
    return _result({"error": error.code, "message": str(error), "status": error.status}, is_error=True)


def _make_server(endpoint: Endpoint) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed_tools(endpoint, _caller_of(ctx).surface))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = _caller_of(ctx)
        arguments = dict(params.arguments or {})
        try:
            unstorable = unstorable_reason(arguments)
            if unstorable is not None:  # what the session API's parser refuses
                raise Refused(f"Invalid arguments: {unstorable.replace('the JSON body', 'they')}.")
            if endpoint == "tools":
                answer = await _call_tool_async(caller, params.name, arguments)
                return _result(answer, is_error=bool(answer["isError"]))
            answer = await run_agent_tool(caller, params.name, arguments)
            return _result(answer, is_error=answer.get("isError") is True)
        except DomainError as error:
            return _refusal(error)
        except (OperationalError, InterfaceError):
            # As the routes answer 503 while the database is down: a result, not a JSON-RPC error.
            return _result({**DATABASE_UNAVAILABLE, "status": 503}, is_error=True)

    name = "agent" if endpoint == "agent" else "agent-tools"
    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


# One of each per process: handlers read everything per request from the caller.
_servers: dict[Endpoint, Server[Any]] = {"agent": _make_server("agent"), "tools": _make_server("tools")}

# The MCP SDK checks Host and Origin against its own lists only when asked; Django has
# checked Host (ALLOWED_HOSTS) and the bearer token by the time a request gets here.
_TRANSPORT = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _manager(endpoint: Endpoint) -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(
        app=_servers[endpoint], json_response=True, stateless=True, security_settings=_TRANSPORT
    )


# event loop -> endpoint -> its running manager (a future while it starts)
_running: dict[asyncio.AbstractEventLoop, dict[Endpoint, asyncio.Future[StreamableHTTPSessionManager]]] = {}


async def _keep_running(
    manager: StreamableHTTPSessionManager, ready: asyncio.Future[StreamableHTTPSessionManager]
) -> None:
    try:
        async with manager.run():
            ready.set_result(manager)
            await asyncio.Event().wait()  # for as long as the loop serves
    except BaseException as error:
        if not ready.done():
            ready.set_exception(error)
        raise


async def _running_manager(endpoint: Endpoint) -> StreamableHTTPSessionManager:
    """The endpoint's session manager on this event loop, started on first use (no
    lifespan under daphne) in a task of its own that lasts as long as the loop."""
    loop = asyncio.get_running_loop()
    per_loop = _running.setdefault(loop, {})
    ready = per_loop.get(endpoint)
    if ready is None or (ready.done() and ready.exception() is not None):
        ready = per_loop[endpoint] = loop.create_future()
        task = loop.create_task(_keep_running(_manager(endpoint), ready), name=f"mcp-{endpoint}")
        _tasks.add(task)  # a reference, so the task is not collected while it runs
        task.add_done_callback(_tasks.discard)
    return await asyncio.shield(ready)


_tasks: set[asyncio.Task[None]] = set()


def _replaying(body: bytes, receive: Receive) -> Callable[[], Awaitable[dict[str, Any]]]:
    """``receive`` for a request whose body was read already: the body, then the client's
    own messages (its disconnect)."""
    delivered = False

    async def replay() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return replay


async def serve(endpoint: Endpoint, caller: McpCaller, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
    """Answer one MCP request whose body Django has read already (``body``), for ``caller``."""
    manager = await _running_manager(endpoint)
    await manager.handle_request({**scope, CALLER: caller}, _replaying(body, receive), send)


async def serve_once(
    endpoint: Endpoint, caller: McpCaller, scope: Scope, body: bytes
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The same, with a manager of its own for this one request, answered as (status,
    headers, body): for entry points without the ASGI layer (WSGI, the test client)."""
    sent: list[Message] = []

    async def receive() -> Message:
        await asyncio.Event().wait()  # no disconnect: the caller waits for the answer
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    manager = _manager(endpoint)
    async with manager.run():
        await manager.handle_request({**scope, CALLER: caller}, _replaying(body, receive), send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return int(start["status"]), list(start.get("headers", [])), content
