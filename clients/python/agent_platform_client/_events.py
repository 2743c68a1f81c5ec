"""Event records and the two wire formats of the stream route: NDJSON (one record per
line) and Server-Sent Events (parsed as the WHATWG HTML standard's event-stream
interpretation says: fields, comments, multi-line ``data``, ``id`` and ``retry``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

StreamFormat = Literal["ndjson", "sse"]

NDJSON = "application/x-ndjson"
EVENT_STREAM = "text/event-stream"

# After one of these the server ends the stream: nothing more will come.
SESSION_END = frozenset({"session.completed", "session.failed"})
TURN_END = frozenset({"turn.completed", "turn.failed"})


@dataclass(frozen=True)
class Event:
    """One event record ``{type, index, sessionId, turnId?, at, data}``."""

    type: str
    index: int
    session_id: str
    turn_id: str | None
    at: str | None
    data: dict[str, Any]

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Event:
        return cls(
            type=str(record["type"]),
            index=int(record["index"]),
            session_id=str(record.get("sessionId", "")),
            turn_id=record.get("turnId"),
            at=record.get("at"),
            data=dict(record.get("data") or {}),
        )

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"type": self.type, "index": self.index, "sessionId": self.session_id}
        if self.turn_id is not None:
            record["turnId"] = self.turn_id
        record.update(at=self.at, data=self.data)
        return record


def record_of(text: str) -> Event | None:
    """The event in one NDJSON line or SSE ``data``; None for a blank line or a
    keep-alive (anything that is not an event record).

    Raises:
        ValueError: the text is not JSON (a line cut short, for one).
    """
    text = text.strip()
    if not text:
        return None
    value = json.loads(text)
    if not isinstance(value, dict) or "type" not in value or not isinstance(value.get("index"), int):
        return None
    return Event.from_record(value)


@dataclass
class SseMessage:
    """One dispatched Server-Sent Event."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


@dataclass
class SseParser:
    """Incremental event-stream parser: feed it decoded text, get the dispatched events.

    Example::

        parser = SseParser()
        list(parser.feed("id: 3\\ndata: {...}\\n\\n"))  # [SseMessage(data="{...}", id="3")]

    ``last_event_id`` keeps the last ``id`` field seen (what ``Last-Event-ID`` sends).
    """

    last_event_id: str = ""
    _buffer: str = ""
    _data: list[str] = field(default_factory=list)
    _event: str = ""
    _retry: int | None = None
    _first: bool = True

    def feed(self, text: str) -> Iterator[SseMessage]:
        if self._first and text:
            self._first = False
            text = text.removeprefix("\ufeff")
        self._buffer += text
        while True:
            line, ending = _split_line(self._buffer)
            if ending is None:
                return
            self._buffer = self._buffer[ending:]
            message = self._line(line)
            if message is not None:
                yield message

    def _line(self, line: str) -> SseMessage | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment: a heartbeat
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SseMessage | None:
        data, event, retry = self._data, self._event, self._retry
        self._data, self._event, self._retry = [], "", None
        if not data:
            return None
        return SseMessage(event=event or "message", data="\n".join(data), id=self.last_event_id or None, retry=retry)


def _split_line(buffer: str) -> tuple[str, int | None]:
    """The first complete line of ``buffer`` and where the next starts (CRLF, LF or CR)."""
    for position, char in enumerate(buffer):
        if char == "\n":
            return buffer[:position], position + 1
        if char == "\r":
            if position + 1 == len(buffer):
                return "", None  # a CR at the end may be half of a CRLF: wait for more
            return buffer[:position], position + (2 if buffer[position + 1] == "\n" else 1)
    return "", None


def parse_sse(chunks: Iterable[str]) -> Iterator[SseMessage]:
    """Every event of a whole event stream (for tests and saved streams)."""
    parser = SseParser()
    for chunk in chunks:
        yield from parser.feed(chunk)


@dataclass
class TurnResult:
    """A turn followed to its end (or to an approval it waits for)."""

    session_id: str
    continuation_token: str
    turn_id: str
    events: list[Event]
    # Where a stream of this session picks up after this turn's last event seen.
    next_index: int = 0

    @property
    def status(self) -> Literal["completed", "failed", "parked", "running"]:
        """``parked`` when the turn waits for an approval decision."""
        for event in reversed(self.events):
            if event.type == "turn.completed":
                return "completed"
            if event.type == "turn.failed":
                return "failed"
            if event.type == "action.approval_requested":
                return "parked"
        return "running"

    @property
    def reply(self) -> str:
        """The turn's final text (top level, not a subagent's); ``""`` if none."""
        texts = [e.data.get("text", "") for e in self.events if e.type == "message.completed"]
        top = [e.data.get("text", "") for e in self.events if e.type == "message.completed" and not _nested(e)]
        return str((top or texts or [""])[-1])

    @property
    def failure(self) -> str | None:
        failed = [e for e in self.events if e.type == "turn.failed"]
        return str(failed[-1].data.get("message", "")) if failed else None

    @property
    def pending_approvals(self) -> list[dict[str, Any]]:
        return pending_approvals(self.events)


def _nested(event: Event) -> bool:
    return bool(event.data.get("parentCallId"))


def pending_approvals(events: Iterable[Event]) -> list[dict[str, Any]]:
    """Calls that asked for approval and have no decision yet:
    ``[{"callId", "toolName", "args", "turnId"}]``, in the order they asked."""
    waiting: dict[str, dict[str, Any]] = {}
    for event in events:
        call_id = event.data.get("callId")
        if event.type == "action.approval_requested" and call_id:
            waiting[call_id] = {
                "callId": call_id,
                "toolName": event.data.get("toolName"),
                "args": event.data.get("args"),
                "turnId": event.turn_id,
            }
        elif event.type == "action.approval_resolved" and call_id:
            waiting.pop(call_id, None)
        elif event.type in TURN_END:
            # A turn that ended (interrupted, say) asks for nothing any more.
            waiting = {key: value for key, value in waiting.items() if value["turnId"] != event.turn_id}
    return list(waiting.values())
