"""A turn's spans and metric points, rebuilt from its events (DESIGN.md §9.9).

Spans are never held open while a turn runs: the event log is durable, a turn may be
taken up by another worker after its own died, and a span that lived in the dead
worker would be lost. When the turn has ended, its events (in index order, from every
attempt) give each span its start and end: ``turn.started`` → ``turn.completed`` /
``turn.failed`` for the turn, ``step.started`` → ``step.completed`` for a model call,
the run's previous event → ``action.result`` for a tool, ``subagent.called`` →
``subagent.completed`` for a subagent. Ids are derived from the turn and call ids, so
the same turn always yields the same trace (an export repeated after a crash is a
duplicate a backend can recognise, not a second trace).

Prompt text and tool payloads become attributes only with ``include_content``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from agents.events import EventType

SCOPE = InstrumentationScope("agent_platform")
# Longest content attribute value (characters): a span is not a transcript store.
MAX_CONTENT_CHARS = 8_192
USAGE_TYPES = {
    "input": "inputTokens",
    "output": "outputTokens",
    "cache_read": "cacheReadTokens",
    "cache_write": "cacheWriteTokens",
    "reasoning": "reasoningTokens",
}

Attributes = dict[str, Any]


@dataclass(frozen=True)
class TurnFacts:
    """What the events do not say about a turn."""

    session_id: str
    agent: str
    turn_id: str
    channel: str
    message: str = ""
    # Model id (``provider:name``) of each subagent by its tool name, and the agent's own.
    model: str = "test"
    subagent_models: Mapping[str, str] = field(default_factory=dict)
    include_content: bool = False
    # ``ctx.host.otel.set_attributes`` calls: by call id (None: the turn span).
    extra: Mapping[str | None, Attributes] = field(default_factory=dict)


@dataclass
class TurnTelemetry:
    """A settled turn: its spans, and what its metrics count."""

    spans: list[ReadableSpan]
    usage: dict[str, int]
    cost: float | None
    status: str  # completed | failed
    tool_calls: list[tuple[str, str]]  # (tool name, success | error)
    subagents: list[str]


def _id(bits: int, *parts: str) -> int:
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=bits // 8).digest()
    return int.from_bytes(digest, "big") or 1  # zero is the invalid id


def trace_id_of(turn_id: str) -> int:
    """The trace id of a turn's trace (a 128-bit id derived from the turn id)."""
    return _id(128, "trace", turn_id)


def _ns(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)


def _content(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text[:MAX_CONTENT_CHARS]


def split_model(model_id: str) -> tuple[str, str]:
    """``("openai", "gpt-4o")`` from ``openai:gpt-4o``; the ``test`` model is its own provider."""
    provider, _, name = model_id.partition(":")
    return (provider, name) if name else (model_id, model_id)


@dataclass
class _Open:
    name: str
    span_id: int
    parent_id: int | None
    start: int
    kind: SpanKind = SpanKind.INTERNAL
    attributes: Attributes = field(default_factory=dict)


class _Builder:
    def __init__(self, facts: TurnFacts, resource: Resource) -> None:
        self.facts = facts
        self.resource = resource
        self.trace_id = trace_id_of(facts.turn_id)
        self.root_id = _id(64, "turn", facts.turn_id)
        self.spans: list[ReadableSpan] = []
        self.open: dict[str, _Open] = {}  # by a key of our own (step, call)
        self.clock: dict[str | None, int] = {}  # the last event's time in each run (by parent call)
        self.args: dict[str, Any] = {}
        self.subagent_calls: dict[str, str] = {}  # call id -> subagent name
        self.tool_calls: list[tuple[str, str]] = []
        self.model = facts.model  # the turn's, as turn.started logged it

    def _context(self, span_id: int) -> SpanContext:
        return SpanContext(self.trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    def close(self, span: _Open, end: int, error: str | None = None) -> None:
        status = Status(StatusCode.ERROR, error[:512]) if error is not None else Status(StatusCode.UNSET)
        self.spans.append(
            ReadableSpan(
                span.name,
                context=self._context(span.span_id),
                parent=self._context(span.parent_id) if span.parent_id is not None else None,
                resource=self.resource,
                attributes=span.attributes,
                kind=span.kind,
                status=status,
                start_time=span.start,
                end_time=max(end, span.start),
                instrumentation_scope=SCOPE,
            )
        )

    def parent_of(self, parent_call: str | None) -> int:
        return _id(64, "call", parent_call) if parent_call else self.root_id

    def model_of(self, parent_call: str | None) -> str:
        if parent_call is None:
            return self.model
        return self.facts.subagent_models.get(self.subagent_calls.get(parent_call, ""), self.facts.model)

    def on(self, type_: str, data: Mapping[str, Any], at: int) -> None:
        parent = data.get("parentCallId")
        previous = self.clock.get(parent, at)
        self.clock[parent] = at
        if type_ == EventType.STEP_STARTED:
            provider, name = split_model(self.model_of(parent))
            self.open[f"step:{parent}:{data.get('step')}"] = _Open(
                f"chat {name}",
                _id(64, "step", self.facts.turn_id, str(parent), str(data.get("step"))),
                self.parent_of(parent),
                at,
                SpanKind.CLIENT,
                {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": name},
            )
        elif type_ == EventType.STEP_COMPLETED:
            span = self.open.pop(f"step:{parent}:{data.get('step')}", None)
            if span is not None:
                usage = data.get("usage") or {}
                span.attributes["gen_ai.usage.input_tokens"] = int(usage.get("inputTokens", 0))
                span.attributes["gen_ai.usage.output_tokens"] = int(usage.get("outputTokens", 0))
                self.close(span, at)
        elif type_ == EventType.ACTIONS_REQUESTED:
            for call in data.get("calls") or []:
                self.args[str(call.get("callId"))] = call.get("args")
        elif type_ == EventType.SUBAGENT_CALLED:
            call_id, name = str(data.get("callId")), str(data.get("subagent"))
            self.subagent_calls[call_id] = name
            attributes: Attributes = {"agent_sdk.call_id": call_id, "agent_sdk.subagent": name}
            if self.facts.include_content:
                attributes["agent_sdk.subagent.message"] = _content(data.get("message", ""))
            self.open[f"call:{call_id}"] = _Open(
                "agent_sdk.subagent", _id(64, "call", call_id), self.parent_of(parent), at, attributes=attributes
            )
        elif type_ == EventType.SUBAGENT_COMPLETED:
            span = self.open.pop(f"call:{data.get('callId')}", None)
            if span is not None:
                if self.facts.include_content and "result" in data:
                    span.attributes["agent_sdk.subagent.result"] = _content(data["result"])
                error = data.get("error")
                self.close(span, at, None if error is None else str(error))
        elif type_ == EventType.ACTION_RESULT:
            call_id, tool = str(data.get("callId")), str(data.get("toolName"))
            if call_id in self.subagent_calls:
                return  # the subagent's span stands for the call
            status = "error" if data.get("isError") else "success"
            self.tool_calls.append((tool, status))
            attributes = {"agent_sdk.call_id": call_id, "cursor.tool.name": tool, "cursor.tool.status": status}
            if data.get("stubbed"):
                attributes["agent_sdk.tool.stubbed"] = True
            if self.facts.include_content:
                attributes["agent_sdk.tool.arguments"] = _content(self.args.get(call_id))
                attributes["agent_sdk.tool.result"] = _content(data.get("output"))
            # Authored attributes first: they never overwrite the platform's own (agent_sdk.agent, ...).
            attributes = {**self.facts.extra.get(call_id, {}), **attributes}
            # Calls of a step run one after another: each starts when the run's previous event was logged.
            span = _Open(
                "agent_sdk.tool", _id(64, "call", call_id), self.parent_of(parent), previous, attributes=attributes
            )
            self.close(span, at, "the tool call failed" if status == "error" else None)


def turn_telemetry(
    records: Iterable[tuple[str, Mapping[str, Any], datetime]], facts: TurnFacts, resource: Resource
) -> TurnTelemetry:
    """The spans of an ended turn from its events ``(type, data, at)`` in index order."""
    builder = _Builder(facts, resource)
    start = end = None
    model = facts.model
    outcome: tuple[str, Mapping[str, Any]] | None = None
    steps_usage = dict.fromkeys(USAGE_TYPES.values(), 0)
    for type_, data, at in records:
        moment = _ns(at)
        start = moment if start is None else start
        end = moment
        if type_ == EventType.TURN_STARTED:
            model = builder.model = str(data.get("model") or model)
            start = moment
            continue
        if type_ in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            outcome = (type_, data)
            break
        if type_ == EventType.STEP_COMPLETED:
            for key in steps_usage:
                steps_usage[key] += int((data.get("usage") or {}).get(key, 0))
        builder.on(type_, data, moment)
    if start is None or end is None:
        start = end = 0
    failed = outcome is None or outcome[0] == EventType.TURN_FAILED
    ended = outcome[1] if outcome is not None else {}
    logged_usage = ended.get("usage")
    usage_source: Mapping[str, Any] = logged_usage if not failed and isinstance(logged_usage, Mapping) else steps_usage
    usage = {kind: int(usage_source.get(key, 0) or 0) for kind, key in USAGE_TYPES.items()}
    cost = ended.get("cost") if not failed else None
    provider, name = split_model(model)
    attributes: Attributes = {
        "agent_sdk.session_id": facts.session_id,
        "cursor.conversation.id": facts.session_id,
        "agent_sdk.agent": facts.agent,
        "agent_sdk.turn_id": facts.turn_id,
        "agent_sdk.channel": facts.channel,
        "agent_sdk.turn.status": "failed" if failed else "completed",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": facts.agent,
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": name,
        "gen_ai.usage.input_tokens": usage["input"],
        "gen_ai.usage.output_tokens": usage["output"],
    }
    if cost is not None:
        attributes["agent_sdk.cost.usd"] = float(cost)
    if facts.include_content:
        attributes["agent_sdk.turn.input"] = _content(facts.message)
        if not failed:
            attributes["agent_sdk.turn.output"] = _content(ended.get("result", ""))
    attributes = {**facts.extra.get(None, {}), **attributes}
    for span in list(builder.open.values()):  # cut short (the turn failed mid-step): end with the turn
        builder.close(span, end, "the turn ended first")
    root = _Open("agent_sdk.turn", builder.root_id, None, start, attributes=attributes)
    builder.close(root, end, str(ended.get("message", "the turn failed")) if failed else None)
    return TurnTelemetry(
        spans=builder.spans,
        usage=usage,
        cost=float(cost) if cost is not None else None,
        status="failed" if failed else "completed",
        tool_calls=builder.tool_calls,
        subagents=list(builder.subagent_calls.values()),
    )


def http_span(
    *,
    method: str,
    route: str,
    status: int,
    start: int,
    end: int,
    agent: str,
    parent: SpanContext | None,
    resource: Resource,
    span_id: int,
    trace_id: int,
) -> ReadableSpan:
    """The ``agent_sdk.http`` SERVER span of one request (``parent``: the caller's
    ``traceparent``, if it sent a valid one; then the span joins the caller's trace)."""
    if parent is not None and parent.is_valid:
        trace_id = parent.trace_id
    else:
        parent = None
    attributes: Attributes = {
        "http.request.method": method,
        "http.route": route,
        "http.response.status_code": status,
        "agent_sdk.agent": agent,
    }
    return ReadableSpan(
        "agent_sdk.http",
        context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)),
        parent=parent,
        resource=resource,
        attributes=attributes,
        kind=SpanKind.SERVER,
        status=Status(StatusCode.ERROR) if status >= 500 else Status(StatusCode.UNSET),
        start_time=start,
        end_time=max(end, start),
        instrumentation_scope=SCOPE,
    )
