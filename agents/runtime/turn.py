"""One turn: build the prompt, stream the model, run the tools it asks for, feed
the results back, until it answers (DESIGN.md §4).

``run_turn`` is the entry point; ``resume_turn`` continues a turn parked on
approvals from its saved state. Events go out through a ``TurnEmitter``; nothing
here knows about Django, Celery or HTTP.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from agents import events
from agents.discovery import AgentSurface, ExtensionInfo, extension_context
from agents.events import INTERRUPTED, EventType
from agents.runtime.artifact_tool import TAG_ARTIFACT_TOOL, run_tag_artifact, tag_artifact_spec
from agents.runtime.conversation import message_from_dict, message_to_dict, new_call_id, usage_from_dict
from agents.runtime.emitter import EventSink, TurnEmitter
from agents.runtime.fs.base import FileSystem, FileSystemError
from agents.runtime.fs.build import build_filesystem
from agents.runtime.fs.host import FileStore
from agents.runtime.fs.scratch import TurnScratch, with_turn_scratch
from agents.runtime.fs.tools import (
    FILE_TOOL_SPECS,
    WRITE_FILE_TOOLS,
    call_file_tool,
    is_read_only,
    select_file_tools,
)
from agents.runtime.mcp.connections import McpConnections, McpTool
from agents.runtime.pricing import PriceOverrides, cost_usd
from agents.runtime.prompt import LOAD_SKILL_TOOL, instructions_text, system_prompt
from agents.runtime.providers.base import (
    Message,
    ModelError,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolSpec,
    Usage,
    UsageEvent,
)
from agents.runtime.providers.gateway import ProviderSettings, provider_for, stream_with_retries
from agents.runtime.replay import Journal, LoggedStep
from agents.runtime.tool_calls import (
    CallResult,
    error,
    needs_approval,
    run_agent_tool,
    run_server_tool,
    schema_arguments,
    validate_arguments,
)
from agents.runtime.workspace import prepare_workspace, with_memory
from agents.sdk import ChannelInfo, ResultContext, SessionInfo, Signal, ToolContext
from agents.sdk._context import Artifacts, Host
from agents.telemetry import running_in

DEFAULT_MAX_STEPS = 25


@dataclass
class TurnRequest:
    """Everything a turn needs that is not in the agent's surface."""

    session: SessionInfo
    turn_id: str
    message: str
    history: list[Message] = field(default_factory=list)
    arms: dict[str, str] = field(default_factory=dict)
    # The session's workspace folder (prepared by the runtime at the start of each turn),
    # and the files sent with the message, to write into it.
    workspace: Path | None = None
    attachments: dict[str, str] = field(default_factory=dict)
    # The agent's memory/ files to show in a new workspace (``prepare_workspace``); None
    # leaves the workspace's memory/ as it is.
    memory: dict[str, bytes] | None = None
    host: Host | None = None
    artifacts: Artifacts | None = None
    # ctx.secrets: the platform's lookup of the declared names, called again before each
    # call that can read them (tools, dynamic instructions, commit), so a secret set after
    # start is seen at the next call; without one, ``secrets`` as given.
    secrets: Mapping[str, str] = field(default_factory=dict)
    load_secrets: Callable[[Sequence[str]], Awaitable[Mapping[str, str]]] | None = None
    signal: Signal = field(default_factory=Signal)
    # Where host_fs() roots keep their files: the store for "session" or "deployment".
    file_store_for: Callable[[str], FileStore] | None = None
    # ctx.channel of the turn's tools: None when the session takes no follow-up.
    channel: ChannelInfo | None = None
    # The agent's MCP connections, secrets and outbound policy bound (None: public https
    # only and no secrets, as for an in-process run).
    mcp: McpConnections | None = None


@dataclass(frozen=True)
class RuntimeSettings:
    default_model: str = "test"
    providers: ProviderSettings = field(default_factory=ProviderSettings)
    max_steps: int = DEFAULT_MAX_STEPS
    # Prices per million tokens that replace the maintained table's (agents.runtime.pricing).
    price_overrides: PriceOverrides = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    approve: bool
    reason: str = ""
    decided_by: str = ""


@dataclass
class TurnOutcome:
    status: Literal["completed", "failed", "parked"]
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    cost: Decimal | None = None
    failure: str | None = None
    # Parked: what resume_turn needs; completed: the conversation to keep as history.
    state: dict[str, Any] | None = None
    messages: list[Message] = field(default_factory=list)


class TurnFailed(Exception):
    """Ends the turn with ``turn.failed`` and this message."""


@dataclass(frozen=True)
class ParkedSubagent:
    """A subagent call whose run parked on an approval; its state rides in the parent's."""

    state: dict[str, Any]


def pending_calls(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every call of a parked turn that waits for a decision, subagents' included:
    ``[{"callId", "toolName", "args"}]``, in the order they were requested."""
    requested = {call.call_id: call for call in message_from_dict(state["messages"][-1]).tool_calls}
    found = [
        {"callId": call_id, "toolName": requested[call_id].name, "args": requested[call_id].arguments}
        for call_id in state["pending"]
    ]
    for nested in state.get("nested", {}).values():
        found += pending_calls(nested)
    return found


def subagent_spec(name: str, child: AgentSurface) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=child.config.description or f"Delegate to the {name} subagent.",
        input_schema={
            "type": "object",
            "properties": {"message": {"type": "string", "description": "What to ask the subagent."}},
            "required": ["message"],
            "additionalProperties": False,
        },
    )


def file_tool_names(surface: AgentSurface) -> list[str]:
    """The synthesized file tools of an agent with a ``root``: the allow-list's, or all
    of them (without the write tools on a read-only root)."""
    root = surface.config.root
    if root is None:
        return []
    names = select_file_tools(surface.config.tools)
    return [name for name in names if not (is_read_only(root) and name in WRITE_FILE_TOOLS)]


def _offers_tag_artifact(surface: AgentSurface) -> bool:
    # An authored tool of the same name wins (it is the agent's own choice).
    return surface.artifacts is not None and surface.artifacts.tag_artifact and TAG_ARTIFACT_TOOL not in surface.tools


def tool_specs(surface: AgentSurface) -> tuple[ToolSpec, ...]:
    """The tools offered to the model: the agent's tools, its subagents, the skill
    loader and, with a root, the file tools."""
    specs = [ToolSpec(name, e.value.description, e.value.input_schema) for name, e in surface.tools.items()]
    specs += [ToolSpec(name, *FILE_TOOL_SPECS[name]) for name in file_tool_names(surface)]
    specs += [subagent_spec(name, child) for name, child in surface.subagents.items()]
    if _offers_tag_artifact(surface):
        assert surface.artifacts is not None
        specs.append(tag_artifact_spec(surface.artifacts))
    if surface.skills:
        specs.append(
            ToolSpec(
                LOAD_SKILL_TOOL,
                "Load the full instructions of a skill from the catalog.",
                {
                    "type": "object",
                    "properties": {"name": {"type": "string", "enum": sorted(surface.skills)}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
            )
        )
    return tuple(specs)


@dataclass(frozen=True)
class PreparedTurn:
    """What a turn starts from: its instructions, rendered once with the turn's full
    context, and the files of its workspace (whose AGENTS.md holds the same text)."""

    instructions: str
    workspace_files: list[str]


async def render_instructions(
    surface: AgentSurface, ctx: ToolContext, extensions: Mapping[str, ExtensionInfo] | None = None
) -> str:
    """The agent's instructions for this turn.

    Raises:
        TurnFailed: a dynamic part (``instructions.py``) raised: the author's mistake,
            which the turn reports rather than the platform.
    """
    try:
        return await instructions_text(surface, ctx, extensions)
    except Exception as failure:
        raise TurnFailed(f"rendering the instructions failed: {type(failure).__name__}: {failure}") from failure


async def prepare_turn(surface: AgentSurface, request: TurnRequest, ctx: ToolContext) -> PreparedTurn:
    """Render the instructions and refresh the workspace from them (file writes in a
    thread, so other turns on the loop go on).

    Raises:
        TurnFailed: the instructions could not be rendered.
    """
    instructions = await render_instructions(surface, ctx)
    files: list[str] = []
    if request.workspace is not None:
        files = await asyncio.to_thread(
            prepare_workspace, request.workspace, surface, instructions, request.attachments, request.memory
        )
    return PreparedTurn(instructions, files)


class _Run:
    """One run of the step loop over one surface (the agent, or a subagent nested in a call)."""

    def __init__(
        self,
        surface: AgentSurface,
        request: TurnRequest,
        emitter: TurnEmitter,
        settings: RuntimeSettings,
        *,
        nested: bool = False,
        prepared: PreparedTurn | None = None,
        extensions: Mapping[str, ExtensionInfo] | None = None,
    ) -> None:
        self.surface = surface
        # The root agent's mounts: a subagent an extension contributed runs with its mount's config.
        self.extensions = surface.extensions if extensions is None else extensions
        # The root run's instructions and workspace, prepared once for the turn; a
        # subagent renders its own instructions when it is called.
        self.prepared = prepared
        self.request = request
        self.emitter = emitter
        self.settings = settings
        self.nested = nested
        self.model_id = surface.config.model or settings.default_model
        self.usage = Usage()
        self.file_tools = set(file_tool_names(surface))
        self.scratch: TurnScratch | None = None
        self.mcp = request.mcp.for_surface(surface) if request.mcp is not None else McpConnections(surface)
        self._mcp_tools: dict[str, McpTool] | None = None
        self.ctx = ToolContext(
            session=request.session,
            host=request.host,
            artifacts=request.artifacts,
            workspace=request.workspace,
            state_root=request.workspace,
            signal=request.signal,
            channel=request.channel,
        )

    async def secrets(self) -> Mapping[str, str]:
        """``ctx.secrets`` for a call starting now: the names this surface declared, read-only."""
        names = self.surface.config.secrets
        if not names:
            return MappingProxyType({})
        if self.request.load_secrets is not None:
            return MappingProxyType(dict(await self.request.load_secrets(names)))
        return MappingProxyType({name: self.request.secrets[name] for name in names if name in self.request.secrets})

    async def context(self, **changes: Any) -> ToolContext:
        """The turn's ``ctx`` for one call, its secrets looked up now."""
        return dataclasses.replace(self.ctx, secrets=await self.secrets(), **changes)

    # --- the loop ---------------------------------------------------------------------

    async def loop(self, messages: list[Message], step: int) -> TurnOutcome:
        provider, model_name = provider_for(self.model_id, self.settings.providers)
        prepared = self.prepared or PreparedTurn(
            await render_instructions(self.surface, await self.context(), self.extensions), []
        )
        system = system_prompt(self.surface, prepared.instructions, self.request.arms, prepared.workspace_files)
        tools = (*tool_specs(self.surface), *(tool.spec for tool in (await self.mcp_tools()).values()))
        while step < self.settings.max_steps:
            step += 1
            await self.emitter.emit(EventType.STEP_STARTED, {"step": step})
            logged = self._logged_step(step)
            if logged is not None:  # a lost attempt finished this step: not asked again
                text, calls, step_usage = logged.text, list(logged.calls or ()), logged.usage
                self.usage = self.usage + step_usage
            else:
                request = ModelRequest(model_name, system, tuple(messages), tools)
                text, calls, step_usage = await self._model_step(provider, request)
            await self.emitter.emit(EventType.STEP_COMPLETED, {"step": step, "usage": step_usage.as_dict()})
            messages.append(Message("assistant", text, tuple(calls)))
            if not calls:
                return TurnOutcome("completed", text=text, usage=self.usage, messages=messages)
            await self.emitter.emit(
                EventType.ACTIONS_REQUESTED, events.actions_requested([(c.call_id, c.name, c.arguments) for c in calls])
            )
            results: dict[str, CallResult] = {}
            pending: list[ToolCall] = []
            nested: dict[str, dict[str, Any]] = {}
            for call in calls:
                if self._needs_approval(call):
                    pending.append(call)
                    await self.emitter.emit(
                        EventType.ACTION_APPROVAL_REQUESTED,
                        {"callId": call.call_id, "toolName": call.name, "args": call.arguments},
                    )
                    continue
                result = await self._execute(call)
                if isinstance(result, ParkedSubagent):
                    nested[call.call_id] = result.state
                else:
                    results[call.call_id] = result
            if pending or nested:
                return self._park(messages, step, results, [c.call_id for c in pending], nested)
            messages += self._result_messages(calls, results)
        raise TurnFailed(f"the turn took more than {self.settings.max_steps} model steps")

    def _logged_step(self, step: int) -> LoggedStep | None:
        journal = self.emitter.journal
        return journal.model_step(self.emitter.parent_call_id, step) if journal is not None else None

    async def _model_step(self, provider: Any, request: ModelRequest) -> tuple[str, list[ToolCall], Usage]:
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[ToolCall] = []
        usage = Usage()
        async for event in stream_with_retries(provider, request, self.settings.providers):
            if isinstance(event, TextDelta):
                text.append(event.text)
                await self.emitter.delta(EventType.MESSAGE_APPENDED, event.text)
            elif isinstance(event, ReasoningDelta):
                reasoning.append(event.text)
                await self.emitter.delta(EventType.REASONING_APPENDED, event.text)
            elif isinstance(event, ToolCallEvent):
                # The platform's own id: unique in the session (approvals are addressed by it),
                # whatever the provider (or the test model) numbered its calls.
                calls.append(dataclasses.replace(event.call, call_id=new_call_id()))
            elif isinstance(event, UsageEvent):
                usage = usage + event.usage
                self.usage = self.usage + event.usage
        if reasoning:
            await self.emitter.emit(EventType.REASONING_COMPLETED, {"text": "".join(reasoning)})
        if text:
            await self.emitter.emit(EventType.MESSAGE_COMPLETED, {"text": "".join(text)})
        return "".join(text), calls, usage

    # --- tool calls ------------------------------------------------------------------------

    async def mcp_tools(self) -> dict[str, McpTool]:
        """The advertised MCP tools, listed once per run (a server that cannot list is left out)."""
        if self._mcp_tools is None:
            self._mcp_tools = await self.mcp.model_tools() if self.surface.mcp_connections else {}
        return self._mcp_tools

    def _needs_approval(self, call: ToolCall) -> bool:
        if call.arguments is None:
            return False
        entry = self.surface.tools.get(call.name)
        if entry is None:
            mcp_tool = (self._mcp_tools or {}).get(call.name)
            return mcp_tool is not None and mcp_tool.needs_approval
        return needs_approval(entry.value, call.arguments)

    async def _execute(self, call: ToolCall) -> CallResult | ParkedSubagent:
        logged = self._logged_result(call)
        if logged is not None:  # it ran on a lost attempt: never twice
            return logged
        result = await self._dispatch(call)
        if isinstance(result, ParkedSubagent):
            return result  # its action.result comes when the subagent finishes
        return await self._record_result(call, result)

    def _logged_result(self, call: ToolCall) -> CallResult | None:
        journal = self.emitter.journal
        if journal is None or (call.name in self.surface.subagents and call.name not in self.file_tools):
            return None  # a subagent call replays its own logged steps, so its usage counts
        return journal.result(call.call_id)

    async def _record_result(self, call: ToolCall, result: CallResult) -> CallResult:
        data = events.action_result(
            call.call_id, call.name, result.output, is_error=result.is_error, stubbed=result.stubbed
        )
        await self.emitter.emit(EventType.ACTION_RESULT, data)
        return result

    def filesystem(self) -> FileSystem:
        """The root for this turn, built on first use, with a turn-local ``/tmp``."""
        if self.scratch is None:
            root = self.surface.config.root
            spec = root(self.request.session) if callable(root) else root
            base = build_filesystem(
                spec, workspace_dir=self.request.workspace, file_store_for=self.request.file_store_for
            )
            self.scratch = with_turn_scratch(with_memory(base, self.request.workspace))
        return self.scratch.fs

    def drop_scratch(self) -> None:
        if self.scratch is not None:
            self.scratch.drop()
            self.scratch = None

    async def _run_file_tool(self, call: ToolCall) -> CallResult:
        arguments = _checked(call, FILE_TOOL_SPECS[call.name].input_schema)
        if isinstance(arguments, CallResult):
            return arguments
        try:
            return CallResult(await call_file_tool(self.filesystem(), call.name, arguments))
        except FileSystemError as failure:
            return error(str(failure))

    async def _dispatch(self, call: ToolCall) -> CallResult | ParkedSubagent:
        if call.name in self.file_tools:
            return await self._run_file_tool(call)
        if call.name in self.surface.subagents:
            problem = _checked(call, subagent_spec(call.name, self.surface.subagents[call.name]).input_schema)
            return problem if isinstance(problem, CallResult) else await self._run_subagent(call)
        if call.name == LOAD_SKILL_TOOL and self.surface.skills:
            arguments = _checked(call, {"properties": {"name": {"type": "string"}}, "required": ["name"]})
            if isinstance(arguments, CallResult):
                return arguments
            skill = self.surface.skills.get(arguments["name"])
            return CallResult(skill.value.body) if skill else error(f"no skill {arguments['name']!r}; see the catalog")
        if call.name == TAG_ARTIFACT_TOOL and _offers_tag_artifact(self.surface):
            return await self._tag_artifact(call)
        entry = self.surface.tools.get(call.name)
        if entry is None:
            mcp_tools = await self.mcp_tools()
            if call.name in mcp_tools:
                return await self._run_mcp_tool(call, mcp_tools[call.name])
            names = [spec.name for spec in tool_specs(self.surface)] + list(mcp_tools)
            return error(f"unknown tool {call.name!r}; available: {', '.join(names) or 'none'}")
        tool = entry.value
        arguments = validate_arguments(tool, call.arguments, call.raw_arguments)
        if isinstance(arguments, CallResult):
            return arguments
        if self.request.session.dry_run and tool.effect == "write":
            return CallResult({"stubbed": True, "toolName": tool.name, "args": call.arguments}, stubbed=True)
        if tool.execution == "agent":
            if self.request.workspace is None:
                return error(f"{tool.name} runs in the session workspace, and this run has none")
            if not getattr(tool.fn, "sandboxed", False):  # a sandboxed tree's runner runs in the workspace already
                return await run_agent_tool(tool, arguments, entry.path, self.request.workspace)
        ctx = await self.context(call_id=call.call_id, extension=extension_context(self.extensions, entry.extension))
        with running_in(self.request.turn_id, call.call_id):  # ctx.host.otel.set_attributes: the tool's span
            return await run_server_tool(tool, arguments, ctx)

    async def _run_mcp_tool(self, call: ToolCall, tool: McpTool) -> CallResult:
        if call.arguments is None:
            return error(f"the arguments for {call.name} are not a JSON object: {call.raw_arguments[:200]!r}")
        if self.request.session.dry_run and tool.effect == "write":
            return CallResult({"stubbed": True, "toolName": call.name, "args": call.arguments}, stubbed=True)
        return await self.mcp.call_model_tool(tool, call.arguments)

    async def _tag_artifact(self, call: ToolCall) -> CallResult:
        assert self.surface.artifacts is not None
        if self.request.session.dry_run:  # it writes: stubbed like every write in a dry run
            return CallResult({"stubbed": True, "toolName": call.name, "args": call.arguments}, stubbed=True)
        root = self.filesystem if self.surface.config.root is not None else None
        ctx = dataclasses.replace(self.ctx, call_id=call.call_id)
        return await run_tag_artifact(self.surface.artifacts, call.arguments, ctx, root)

    async def _run_subagent(self, call: ToolCall) -> CallResult | ParkedSubagent:
        message = str((call.arguments or {}).get("message", ""))
        await self.emitter.emit(
            EventType.SUBAGENT_CALLED, {"callId": call.call_id, "subagent": call.name, "message": message}
        )
        run = self._child(call)
        return await self._subagent_outcome(call, run, run.loop([Message("user", message)], 0))

    def _child(self, call: ToolCall) -> _Run:
        child = self.surface.subagents[call.name]
        return _Run(
            child,
            self.request,
            self.emitter.nested(call.call_id),
            self.settings,
            nested=True,
            extensions=self.extensions,
        )

    async def _subagent_outcome(self, call: ToolCall, run: _Run, body: Any) -> CallResult | ParkedSubagent:
        """Run (or resume) a subagent; parked, its whole state goes into the parent's."""
        try:
            outcome = await body
        except (ModelError, TurnFailed) as failure:
            outcome = TurnOutcome("failed", failure=str(failure))
        finally:
            run.drop_scratch()
        if outcome.status == "parked" and outcome.state is not None:
            return ParkedSubagent(outcome.state)
        self.usage = self.usage + run.usage
        completed = {"callId": call.call_id, "subagent": call.name}
        if outcome.status == "completed":
            await self.emitter.emit(EventType.SUBAGENT_COMPLETED, {**completed, "result": outcome.text})
            return CallResult(outcome.text)
        await self.emitter.emit(EventType.SUBAGENT_COMPLETED, {**completed, "error": outcome.failure})
        return error(f"subagent {call.name} failed: {outcome.failure}")

    def _result_messages(self, calls: list[ToolCall], results: dict[str, CallResult]) -> list[Message]:
        return [
            Message(
                "tool",
                results[c.call_id].text,
                call_id=c.call_id,
                tool_name=c.name,
                is_error=results[c.call_id].is_error,
            )
            for c in calls
        ]

    # --- parking ---------------------------------------------------------------------------

    def _park(
        self,
        messages: list[Message],
        step: int,
        results: dict[str, CallResult],
        pending: list[str],
        nested: dict[str, dict[str, Any]],
    ) -> TurnOutcome:
        state = {
            "messages": [message_to_dict(m) for m in messages],
            "step": step,
            "usage": self.usage.as_dict(),
            "results": {
                cid: {"output": r.output, "isError": r.is_error, "stubbed": r.stubbed} for cid, r in results.items()
            },
            "pending": pending,
            "nested": nested,
        }
        return TurnOutcome("parked", usage=self.usage, state=state)

    async def resume(self, state: dict[str, Any], decisions: dict[str, Decision]) -> TurnOutcome:
        messages = [message_from_dict(m) for m in state["messages"]]
        self.usage = usage_from_dict(state["usage"])
        calls = list(messages[-1].tool_calls)
        results = {
            cid: CallResult(r["output"], is_error=r["isError"], stubbed=r.get("stubbed", False))
            for cid, r in state["results"].items()
        }
        still_nested: dict[str, dict[str, Any]] = {}
        for call in calls:
            if call.call_id in state["pending"]:
                results[call.call_id] = await self._decide(call, decisions[call.call_id])
            elif call.call_id in state.get("nested", {}):
                run = self._child(call)
                outcome = await self._subagent_outcome(call, run, run.resume(state["nested"][call.call_id], decisions))
                if isinstance(outcome, ParkedSubagent):
                    still_nested[call.call_id] = outcome.state
                else:
                    results[call.call_id] = await self._record_result(call, outcome)
        if still_nested:
            return self._park(messages, state["step"], results, [], still_nested)
        messages += self._result_messages(calls, results)
        return await self.loop(messages, state["step"])

    async def _decide(self, call: ToolCall, decision: Decision) -> CallResult:
        await self.emitter.emit(
            EventType.ACTION_APPROVAL_RESOLVED,
            {
                "callId": call.call_id,
                "toolName": call.name,
                "decision": "approve" if decision.approve else "deny",
                "reason": decision.reason,
                "decidedBy": decision.decided_by,
            },
        )
        if decision.approve:
            result = await self._execute(call)
            assert isinstance(result, CallResult)  # only tools ask for approval, never subagents
            return result
        denied = error(f"the call was denied{': ' + decision.reason if decision.reason else ''}")
        return await self._record_result(call, denied)

    # --- the end of the turn -----------------------------------------------------------------

    async def commit(self, text: str) -> None:
        if self.surface.result is None or self.request.session.dry_run:
            return
        if not text.strip():
            raise TurnFailed("the final answer is empty, so there is nothing to commit")
        ctx = ResultContext(
            session=self.request.session,
            text=text,
            host=self.request.host,
            artifacts=self.request.artifacts,
            secrets=await self.secrets(),
        )
        try:
            value = self.surface.result.commit(ctx)
            if inspect.isawaitable(value):
                await value
        except Exception as failure:
            raise TurnFailed(f"result commit failed: {type(failure).__name__}: {failure}") from failure


def _checked(call: ToolCall, schema: dict[str, Any]) -> dict[str, Any] | CallResult:
    """A platform tool's arguments checked against its schema, or the error result that
    tells the model what to change."""
    if call.arguments is None:
        return error(f"the arguments for {call.name} are not a JSON object: {call.raw_arguments[:200]!r}")
    arguments = schema_arguments(call.name, schema, call.arguments)
    if isinstance(arguments, list):
        return error(f"invalid arguments for {call.name}: {'; '.join(arguments)}")
    return arguments


async def _prepared(run: _Run, body: Callable[[], Awaitable[TurnOutcome]]) -> TurnOutcome:
    """``body`` once the turn is prepared (inside ``_finish``, so a failure ends the turn)."""
    run.prepared = await prepare_turn(run.surface, run.request, await run.context())
    return await body()


async def _finish(run: _Run, body: Any) -> TurnOutcome:
    """Run ``body`` (the loop or a resume) and end the turn with exactly one terminal event."""
    emitter = run.emitter
    try:
        outcome: TurnOutcome = await body
        if outcome.status == "completed" and not (emitter.journal is not None and emitter.journal.ended):
            await run.commit(outcome.text)
    except asyncio.CancelledError:
        run.drop_scratch()
        await emitter.flush()
        await emitter.emit(EventType.TURN_FAILED, events.turn_failed(INTERRUPTED))
        return TurnOutcome("failed", usage=run.usage, failure=INTERRUPTED)
    except (ModelError, TurnFailed) as failure:
        run.drop_scratch()
        await emitter.emit(EventType.TURN_FAILED, events.turn_failed(str(failure)))
        return TurnOutcome("failed", usage=run.usage, failure=str(failure))
    run.drop_scratch()  # /tmp lives for one turn (a parked turn resumes with a fresh one)
    if outcome.status == "parked":
        await emitter.flush()
        return outcome
    outcome.cost = cost_usd(run.model_id, run.usage, run.settings.price_overrides)
    cost = float(outcome.cost) if outcome.cost is not None else None
    await emitter.emit(EventType.TURN_COMPLETED, events.turn_completed(outcome.text, run.usage.as_dict(), cost))
    outcome.usage = run.usage
    return outcome


async def run_turn(
    surface: AgentSurface,
    request: TurnRequest,
    sink: EventSink,
    settings: RuntimeSettings | None = None,
    journal: Journal | None = None,
) -> TurnOutcome:
    """Run one turn of ``surface`` answering ``request.message``; emits ``turn.started``
    and exactly one of ``turn.completed`` / ``turn.failed``, or parks on approvals.

    With the ``journal`` of a lost attempt, it takes the turn up where the log ends
    (see ``agents.runtime.replay``)."""
    settings = settings or RuntimeSettings()
    emitter = TurnEmitter(sink, request.turn_id, journal=journal)
    run = _Run(surface, request, emitter, settings)
    await emitter.emit(EventType.TURN_STARTED, {"model": run.model_id, "testModel": run.model_id == "test"})
    messages = [*request.history, Message("user", request.message)]
    with running_in(request.turn_id):
        return await _finish(run, _prepared(run, lambda: run.loop(messages, 0)))


async def resume_turn(
    surface: AgentSurface,
    request: TurnRequest,
    state: dict[str, Any],
    decisions: dict[str, Decision],
    sink: EventSink,
    settings: RuntimeSettings | None = None,
    journal: Journal | None = None,
) -> TurnOutcome:
    """Continue a parked turn once every pending call has a decision (``journal``: as
    for ``run_turn``).

    Raises:
        KeyError: when a pending call has no decision.
    """
    missing = [call["callId"] for call in pending_calls(state) if call["callId"] not in decisions]
    if missing:
        raise KeyError(f"no decision for {missing}")
    emitter = TurnEmitter(sink, request.turn_id, journal=journal)
    run = _Run(surface, request, emitter, settings or RuntimeSettings())
    with running_in(request.turn_id):
        return await _finish(run, _prepared(run, lambda: run.resume(state, decisions)))
