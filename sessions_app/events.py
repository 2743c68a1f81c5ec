"""The event vocabulary of DESIGN.md §5: one place for every event type name.

Event names are a public contract that clients, hooks and tools match on; add to
this list only with the design, never rename.
"""

from __future__ import annotations

from enum import StrEnum


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
