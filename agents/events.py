"""The event vocabulary of DESIGN.md §5: every event type name, the sets the platform
reasons with, payload constructors for the events clients match on, and the one
serialiser of an event record.

Event names are a public contract that clients, hooks and tools match on; add to
this list only with the design, never rename. This module sits below the runtime and
the session service alike (no Django), so both speak the same words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    SESSION_STARTED = "session.started"
    SESSION_WAITING = "session.waiting"
    SESSION_COMPLETED = "session.completed"
    SESSION_FAILED = "session.failed"
    AGENT_BOUND = "agent.bound"
    MESSAGE_RECEIVED = "message.received"
    TURN_QUEUED = "turn.queued"
    TURN_STARTED = "turn.started"
    TURN_COMPLETED = "turn.completed"
    TURN_FAILED = "turn.failed"
    STEP_STARTED = "step.started"
    STEP_COMPLETED = "step.completed"
    REASONING_APPENDED = "reasoning.appended"
    REASONING_COMPLETED = "reasoning.completed"
    MESSAGE_APPENDED = "message.appended"
    MESSAGE_COMPLETED = "message.completed"
    ACTIONS_REQUESTED = "actions.requested"
    ACTION_RESULT = "action.result"
    ACTION_APPROVAL_REQUESTED = "action.approval_requested"
    ACTION_APPROVAL_RESOLVED = "action.approval_resolved"
    SUBAGENT_CALLED = "subagent.called"
    SUBAGENT_COMPLETED = "subagent.completed"
    ARTIFACT_TAGGED = "artifact.tagged"
    AB_ASSIGNED = "ab.assigned"


# A session's stream ends after one of these.
TERMINAL_SESSION_EVENTS = frozenset({EventType.SESSION_COMPLETED, EventType.SESSION_FAILED})

# A turn ends with exactly one of these.
TURN_ENDS = frozenset({EventType.TURN_COMPLETED, EventType.TURN_FAILED})

# Text and reasoning deltas: consecutive ones may be merged into one larger event.
DELTAS = frozenset({EventType.MESSAGE_APPENDED, EventType.REASONING_APPENDED})

# Events that only report the model's progress: nothing acts on them, so a writer
# need not wait for them to be durable before the turn goes on.
PROGRESS = frozenset(
    {
        EventType.TURN_STARTED,
        EventType.STEP_STARTED,
        EventType.STEP_COMPLETED,
        EventType.MESSAGE_APPENDED,
        EventType.MESSAGE_COMPLETED,
        EventType.REASONING_APPENDED,
        EventType.REASONING_COMPLETED,
    }
)

# The message of the ``turn.failed`` that ends a turn stopped by a person or preempted.
INTERRUPTED = "turn interrupted"


# --- payloads of the events clients match on ---------------------------------------------


def turn_completed(result: str, usage: Mapping[str, int], cost: float | None) -> dict[str, Any]:
    """``turn.completed {result, usage, cost}``."""
    return {"result": result, "usage": dict(usage), "cost": cost}


def turn_failed(message: str, reason: str | None = None) -> dict[str, Any]:
    """``turn.failed {message, reason?}``; ``reason`` is a machine-readable cause
    (``worker_lost``, ``time_limit``) where the platform, not the model, ended the turn."""
    return {"message": message, **({"reason": reason} if reason else {})}


def actions_requested(calls: Sequence[tuple[str, str, Any]]) -> dict[str, Any]:
    """``actions.requested {calls: [{callId, toolName, args}]}`` from (call id, tool, args)."""
    return {"calls": [{"callId": call_id, "toolName": name, "args": args} for call_id, name, args in calls]}


def action_result(
    call_id: str, tool_name: str, output: Any, *, is_error: bool, stubbed: bool = False
) -> dict[str, Any]:
    """``action.result {callId, toolName, output, isError, stubbed?}``."""
    data: dict[str, Any] = {"callId": call_id, "toolName": tool_name, "output": output, "isError": is_error}
    if stubbed:
        data["stubbed"] = True
    return data


def artifact_tagged(artifact_id: str, kind: str, name: str, content_type: str, size: int) -> dict[str, Any]:
    """``artifact.tagged {artifactId, kind, name, contentType, size}`` (also for an update in place)."""
    return {"artifactId": artifact_id, "kind": kind, "name": name, "contentType": content_type, "size": size}


# --- the record ----------------------------------------------------------------------------


def event_record(
    type: str, index: int, session_id: str, turn_id: str | None, at: datetime | None, data: Mapping[str, Any]
) -> dict[str, Any]:
    """An event as clients see it on every transport (DESIGN.md §5):
    ``{type, index, sessionId, turnId?, at, data}``, ``at`` in UTC with a ``Z``."""
    record: dict[str, Any] = {"type": str(type), "index": index, "sessionId": session_id}
    if turn_id:
        record["turnId"] = turn_id
    if at is not None:
        record["at"] = at.isoformat().replace("+00:00", "Z")
    record["data"] = data
    return record
