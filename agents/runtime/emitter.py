"""How the runtime records what happens: one event-log interface.

The runtime emits DESIGN.md §5 events through an ``EventSink``. The session
layer's sink appends them durably; ``MemorySink`` keeps them in a list (for
``agent run`` and tests). ``TurnEmitter`` adds the turn id, marks a subagent's
events with ``parentCallId``, and coalesces text and reasoning deltas into fewer,
larger ``*.appended`` events (a size bound or a short time window). The first delta
after any other event goes out alone at once, so readers see the reply start
without waiting for the window.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agents.events import EventType, event_record

if TYPE_CHECKING:
    from agents.runtime.replay import Journal

# A delta buffer is flushed when it holds this many characters or is this old.
COALESCE_CHARS = 2048
COALESCE_SECONDS = 0.02


class EventSink(Protocol):
    async def emit(self, type: EventType, data: dict[str, Any], turn_id: str | None) -> None: ...


@dataclass
class RecordedEvent:
    type: EventType
    data: dict[str, Any]
    turn_id: str | None
    index: int

    def as_record(self, session_id: str) -> dict[str, Any]:
        return event_record(self.type, self.index, session_id, self.turn_id, None, self.data)


@dataclass
class MemorySink:
    """Keeps every event in order, indexed from 0."""

    events: list[RecordedEvent] = field(default_factory=list)

    async def emit(self, type: EventType, data: dict[str, Any], turn_id: str | None) -> None:
        self.events.append(RecordedEvent(type, data, turn_id, len(self.events)))

    def of_type(self, type: EventType) -> list[RecordedEvent]:
        return [event for event in self.events if event.type == type]


_DELTA_TYPES = {EventType.MESSAGE_APPENDED: "text", EventType.REASONING_APPENDED: "text"}


class TurnEmitter:
    """The runtime's handle on the sink for one turn (or one nested subagent run)."""

    def __init__(
        self, sink: EventSink, turn_id: str, parent_call_id: str | None = None, journal: Journal | None = None
    ) -> None:
        self.sink = sink
        self.turn_id = turn_id
        self.parent_call_id = parent_call_id
        # A turn taken up again after its worker was lost: what is logged is not sent twice.
        self.journal = journal
        self.step = 0
        self._pending_type: EventType | None = None
        self._pending: list[str] = []
        self._pending_chars = 0
        self._pending_since = 0.0
        self._last_sent: EventType | None = None

    def nested(self, parent_call_id: str) -> TurnEmitter:
        """An emitter for a subagent run inside the call ``parent_call_id``."""
        return TurnEmitter(self.sink, self.turn_id, parent_call_id, self.journal)

    async def emit(self, type: EventType, data: dict[str, Any] | None = None) -> None:
        await self.flush()
        data = dict(data or {})
        if type == EventType.STEP_STARTED:
            self.step = int(data["step"])
        if self.journal is not None and self.journal.logged(type, data, self.parent_call_id, self.step):
            return
        await self._send(type, data)

    async def delta(self, type: EventType, text: str) -> None:
        """A text or reasoning delta; consecutive ones of a type are merged."""
        if self.journal is not None:
            text = self.journal.unsent_text(type, self.parent_call_id, self.step, text)
            if not text:
                return
        if self._pending_type is not None and self._pending_type != type:
            await self.flush()
        if self._pending_type is None:
            self._pending_type, self._pending_since = type, time.monotonic()
        self._pending.append(text)
        self._pending_chars += len(text)
        if (
            self._last_sent != type
            or self._pending_chars >= COALESCE_CHARS
            or time.monotonic() - self._pending_since >= COALESCE_SECONDS
        ):
            await self.flush()

    async def flush(self) -> None:
        if self._pending_type is None:
            return
        type, text = self._pending_type, "".join(self._pending)
        self._pending_type, self._pending, self._pending_chars = None, [], 0
        await self._send(type, {_DELTA_TYPES[type]: text})

    async def _send(self, type: EventType, data: dict[str, Any]) -> None:
        self._last_sent = type
        if self.parent_call_id is not None:
            data["parentCallId"] = self.parent_call_id
        await self.sink.emit(type, data, self.turn_id)
