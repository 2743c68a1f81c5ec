"""Taking up a turn whose worker was lost, from what its earlier attempts logged.

A redelivered turn runs again from the top (or from its parked state) with the
``Journal`` of the events it already has in the log, and:

- an event already in the log is not emitted again. Events are known by their
  identity: the turn's start and end; a step's ``step.*``, ``*.completed`` and
  ``actions.requested`` by (step, parentCallId); a call's result, approval and
  subagent events by ``callId``. Text deltas of a step that was cut short go out
  only past the text already logged;
- a model step whose ``step.completed`` and ``actions.requested`` are logged is not
  asked again: its text and calls (with their call ids) come from the log. A step
  cut short before that is asked again;
- a call whose ``action.result`` is logged does not run again: the logged result
  goes back to the model. A call that started but logged no result runs once
  more, with the same call id (``ctx.call_id``, the tool's idempotency key).

Nothing here knows about Django: the session layer reads the turn's events and
hands them over as ``(type, data)`` pairs in index order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.events import EventType
from agents.runtime.conversation import usage_from_dict
from agents.runtime.providers.base import ToolCall, Usage
from agents.runtime.tool_calls import CallResult

# Events known by their call id (unique in the session).
_CALL_EVENTS = frozenset(
    {
        EventType.ACTION_RESULT,
        EventType.ACTION_APPROVAL_REQUESTED,
        EventType.ACTION_APPROVAL_RESOLVED,
        EventType.SUBAGENT_CALLED,
        EventType.SUBAGENT_COMPLETED,
    }
)
# Events known by their step (within one run: the turn, or one subagent call).
_STEP_EVENTS = frozenset(
    {
        EventType.STEP_STARTED,
        EventType.STEP_COMPLETED,
        EventType.MESSAGE_COMPLETED,
        EventType.REASONING_COMPLETED,
        EventType.ACTIONS_REQUESTED,
    }
)
_DELTA_EVENTS = frozenset({EventType.MESSAGE_APPENDED, EventType.REASONING_APPENDED})
_ENDED = "turn.ended"

Key = tuple[str, str | None, int | str | None]


def event_key(type: str, data: Mapping[str, Any], parent: str | None, step: int) -> Key | None:
    """What makes an event the same event on another attempt; None for events that
    are not deduplicated (deltas are handled by text)."""
    if type in _CALL_EVENTS:
        return (type, None, data.get("callId"))
    if type in _STEP_EVENTS:
        return (type, parent, step)
    if type == EventType.TURN_STARTED:
        return (type, parent, None)
    if type in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
        return (_ENDED, parent, None)
    return None


@dataclass
class LoggedStep:
    """A model step as the log has it."""

    text: str = ""
    calls: list[ToolCall] | None = None  # None: no actions.requested logged
    completed: bool = False
    usage: Usage = field(default_factory=Usage)


class Journal:
    """The events one turn already logged, to resume it without repeating them.

    Example::

        journal = Journal([("turn.started", {...}), ("step.started", {"step": 1}), ...])
        await run_turn(surface, request, sink, settings, journal=journal)
    """

    def __init__(self, events: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        self._keys: set[Key] = set()
        self._steps: dict[tuple[str | None, int], LoggedStep] = {}
        self._results: dict[str, CallResult] = {}
        # Delta text logged per (type, parentCallId, step) that a new attempt has not yet re-sent.
        self._unsent: dict[tuple[str, str | None, int], str] = {}
        # The turn's terminal event, if an attempt logged it: (type, data).
        self.end: tuple[str, Mapping[str, Any]] | None = None
        current: dict[str | None, int] = {}
        for type, data in events:
            parent = data.get("parentCallId")
            if type == EventType.STEP_STARTED:
                current[parent] = int(data["step"])
            step = current.get(parent, 0)
            if type in _DELTA_EVENTS:
                where = (type, parent, step)
                self._unsent[where] = self._unsent.get(where, "") + str(data.get("text", ""))
                continue
            key = event_key(type, data, parent, step)
            if key is not None:
                self._keys.add(key)
            if key == (_ENDED, None, None):
                self.end = (type, data)
            self._note(type, data, parent, step)

    def _note(self, type: str, data: Mapping[str, Any], parent: str | None, step: int) -> None:
        if type == EventType.ACTION_RESULT:
            self._results[data["callId"]] = CallResult(
                data.get("output"), is_error=bool(data.get("isError")), stubbed=bool(data.get("stubbed"))
            )
            return
        if type not in (EventType.MESSAGE_COMPLETED, EventType.STEP_COMPLETED, EventType.ACTIONS_REQUESTED):
            return
        logged = self._steps.setdefault((parent, step), LoggedStep())
        if type == EventType.MESSAGE_COMPLETED:
            logged.text = str(data.get("text", ""))
        elif type == EventType.STEP_COMPLETED:
            logged.completed = True
            logged.usage = usage_from_dict(data.get("usage") or {})
        else:
            logged.calls = [
                ToolCall(c["callId"], c["toolName"], c.get("args"), _raw(c.get("args"))) for c in data["calls"]
            ]

    def logged(self, type: str, data: Mapping[str, Any], parent: str | None, step: int) -> bool:
        """Whether this event is already in the log."""
        key = event_key(type, data, parent, step)
        return key is not None and key in self._keys

    def unsent_text(self, type: str, parent: str | None, step: int, text: str) -> str:
        """The part of a delta not yet in the log: a step that was cut short streams
        again, and the text its first attempt logged is not sent twice."""
        where = (type, parent, step)
        logged = self._unsent.get(where, "")
        if not logged:
            return text
        if logged.startswith(text):
            self._unsent[where] = logged[len(text) :]
            return ""
        self._unsent[where] = ""
        # Diverged (a model that answers differently this time): send what is new.
        return text[len(logged) :] if text.startswith(logged) else text

    def model_step(self, parent: str | None, step: int) -> LoggedStep | None:
        """The logged outcome of a model step, when it is complete in the log."""
        logged = self._steps.get((parent, step))
        if logged is None or not logged.completed:
            return None
        if logged.calls is None:
            # No calls logged: either it asked for none (then its run ended after it),
            # or the attempt died between step.completed and actions.requested.
            ended = (_ENDED, None, None) if parent is None else (EventType.SUBAGENT_COMPLETED, None, parent)
            if ended not in self._keys:
                return None
            logged.calls = []
        return logged

    def result(self, call_id: str) -> CallResult | None:
        """The logged result of a call, if it has one."""
        return self._results.get(call_id)

    @property
    def ended(self) -> bool:
        """Whether the turn's terminal event is already logged."""
        return self.end is not None


def _raw(args: Any) -> str:
    return "" if args is None else json.dumps(args)
