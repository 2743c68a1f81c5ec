"""Where a turn stands, for callers that wait for it rather than follow its stream
(the MCP server's ``ask`` and ``check``): ``completed`` with its reply, ``failed``,
``awaiting_approval`` with the calls that wait for a person, or still ``running``.

The answer is read from the turn's events, not from its row: the worker records the
row after the events are in the log (``turn_worker._record``), so the log is what a
doorbell ring has just announced. A waiter joins the session's doorbell before its
first read, as a stream does (``sessions_app.doorbell``), so no ring is missed
between a read and the wait; it also reads again at least every
``RECHECK_SECONDS``, for the decisions recorded in rows, which ring no bell.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agent_platform.db import on_pool
from agents.events import EventType
from sessions_app import doorbell
from sessions_app.eventlog import events_of_turn
from sessions_app.models import Approval, ApprovalStatus, Session, Turn

Status = Literal["completed", "failed", "running", "awaiting_approval"]

# Seconds a waiter waits for a ring before it reads the turn again anyway.
RECHECK_SECONDS = 1.0

_OUTCOME_EVENTS = (
    EventType.TURN_COMPLETED,
    EventType.TURN_FAILED,
    EventType.ACTION_APPROVAL_REQUESTED,
    EventType.ACTION_APPROVAL_RESOLVED,
)


@dataclass(frozen=True)
class TurnOutcome:
    """Where one turn stands (``as_dict`` is the MCP tools' answer)."""

    session_id: str
    continuation_token: str
    turn_id: str
    status: Status
    reply: str | None = None
    error: str | None = None
    pending_approvals: list[dict[str, Any]] = field(default_factory=list)

    @property
    def settled(self) -> bool:
        """Nothing will change without someone acting (or the turn has ended)."""
        return self.status != "running"

    def as_dict(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "sessionId": self.session_id,
            "continuationToken": self.continuation_token,
            "turnId": self.turn_id,
            "status": self.status,
        }
        if self.reply is not None:
            answer["reply"] = self.reply
        if self.error is not None:
            answer["error"] = self.error
        if self.status == "awaiting_approval":
            answer["pendingApprovals"] = self.pending_approvals
        return answer


def turn_outcome(session: Session, turn_id: str) -> TurnOutcome:
    """Where the turn stands now, from its events (and the decisions already taken on
    its parked calls, which the log shows only once the turn resumes)."""
    token = Session.objects.filter(pk=session.pk).values_list("continuation_token", flat=True).first()
    running = TurnOutcome(session.pk, token or "", turn_id, "running")
    requested: dict[str, dict[str, Any]] = {}
    created = Turn.objects.filter(pk=turn_id).values_list("created_at", flat=True).first()
    if created is None:
        return running
    events = events_of_turn(session.pk, turn_id, created).filter(type__in=_OUTCOME_EVENTS)
    for type_, data in events.values_list("type", "data"):
        if type_ == EventType.TURN_COMPLETED:
            return replace(running, status="completed", reply=str(data.get("result") or ""))
        if type_ == EventType.TURN_FAILED:
            return replace(running, status="failed", error=str(data.get("message") or ""))
        if type_ == EventType.ACTION_APPROVAL_REQUESTED:
            requested[data["callId"]] = {key: data.get(key) for key in ("callId", "toolName", "args")}
        else:
            requested.pop(data.get("callId"), None)
    if requested:
        decided = Approval.objects.filter(session_id=session.pk, call_id__in=list(requested)).exclude(
            status=ApprovalStatus.PENDING
        )
        for call_id in decided.values_list("call_id", flat=True):
            requested.pop(call_id, None)
    if requested:
        return replace(running, status="awaiting_approval", pending_approvals=list(requested.values()))
    return running


def latest_turn_id(session: Session) -> str | None:
    """The session's newest turn (what ``check`` reports on)."""
    return Turn.objects.filter(session_id=session.pk).order_by("-created_at").values_list("pk", flat=True).first()


_turn_outcome = on_pool(turn_outcome)


async def wait_for_outcome(session: Session, turn_id: str, wait_seconds: float) -> TurnOutcome:
    """The turn's outcome once it is settled, or as it stands after ``wait_seconds``;
    woken by the session's doorbell, on the serving event loop (no thread is held
    while it waits)."""
    deadline = time.monotonic() + wait_seconds
    watch = doorbell.Watch(session.pk, poll_interval=RECHECK_SECONDS)
    await watch.start()
    try:
        while True:
            watch.clear()  # before the read: a ring for anything after it ends the wait
            announced = watch.head
            outcome = await _turn_outcome(session, turn_id)
            left = deadline - time.monotonic()
            if outcome.settled or left <= 0:
                return outcome
            # Woken by a ring for any index not announced before that read (one heard
            # during it too): the log is read as a whole, not followed.
            watch.next_index = announced + 1
            try:
                await asyncio.wait_for(watch.wait(), timeout=min(left, RECHECK_SECONDS))
            except TimeoutError:
                pass
    finally:
        watch.stop()
