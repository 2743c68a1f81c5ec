"""Approvals (DESIGN.md §4): asking for them when a turn parks, deciding them, and the
executing worker's re-check that a decided call is still the one a person approved.

A call's arguments are bound to its approval by a digest (``args_digest``); exactly
one decision wins whatever races (a conditional update); the worker runs an approved
call only if the parked call still names the same tool and arguments.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from agent_platform.models import Principal
from agents.events import EventType
from agents.runtime.turn import Decision, pending_calls
from sessions_app.models import Approval, ApprovalStatus, Event, Session, Turn, TurnStatus
from sessions_app.scheduling import enqueue_turn
from sessions_app.services import SessionError


class ApprovalNotFound(SessionError):
    status = 404
    code = "approval_not_found"


class ApprovalAlreadyDecided(SessionError):
    code = "approval_not_pending"


def decide_approval(session: Session, call_id: str, *, approve: bool, reason: str, principal: Principal) -> Approval:
    """Record a decision on a parked call; when the turn has none left pending it is
    queued to resume. Exactly one decision wins, whatever races.

    Raises:
        ApprovalNotFound: no such call waits in this session.
        ApprovalAlreadyDecided: it was decided already (or its turn was interrupted).
    """
    approval = Approval.objects.filter(session=session, call_id=call_id).first()
    if approval is None:
        raise ApprovalNotFound(f"No approval {call_id!r} in this session.")
    with transaction.atomic():
        decided = Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
            status=ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED,
            reason=reason,
            decided_by=principal,
            decided_at=timezone.now(),
        )
        if not decided:
            raise ApprovalAlreadyDecided(f"The call {call_id!r} is not waiting for a decision.")
        still_pending = Approval.objects.filter(turn_id=approval.turn_id, status=ApprovalStatus.PENDING).exists()
        if not still_pending and Turn.objects.filter(pk=approval.turn_id, status=TurnStatus.PARKED).update(
            status=TurnStatus.QUEUED
        ):
            transaction.on_commit(lambda: enqueue_turn(approval.turn_id, session.tenant_id))
    approval.refresh_from_db()
    return approval


# How long a decision waits for the turn to park after asking for approval.
PARKING_WAIT_SECONDS = 10.0


def decide_once_parked(session: Session, call_id: str, *, approve: bool, reason: str, principal: Principal) -> Approval:
    """``decide_approval``; if the call is not waiting yet although
    ``action.approval_requested`` is in the log (the turn is still parking: its approvals
    are recorded as it ends), again until it is, for at most ``PARKING_WAIT_SECONDS``. A
    client that acts on the event as soon as it sees it is not told the call does not exist.

    Raises:
        ApprovalNotFound: the call was never requested, or the turn did not park in time.
        ApprovalAlreadyDecided: as ``decide_approval``.
    """
    deadline = time.monotonic() + PARKING_WAIT_SECONDS
    while True:
        try:
            return decide_approval(session, call_id, approve=approve, reason=reason, principal=principal)
        except ApprovalNotFound:
            requested = Event.objects.filter(
                session_id=session.pk, type=EventType.ACTION_APPROVAL_REQUESTED, data__callId=call_id
            ).exists()
            if not requested or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def _canonical(value: Any) -> Any:
    """``value`` as unambiguous JSON for hashing: each value tagged with its kind, and a
    number as its normalised decimal, because jsonb keeps a number's value but not
    Python's int/float spelling (``1e16`` is read back as ``10000000000000000``)."""
    if value is None or isinstance(value, bool):
        return ["z" if value is None else "b", value]
    if isinstance(value, (int, float)):
        return ["n", str(Decimal(repr(value)).normalize())]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, (list, tuple)):
        return ["l", [_canonical(item) for item in value]]
    if isinstance(value, Mapping):
        return ["d", sorted([str(key), _canonical(item)] for key, item in value.items())]
    return ["o", str(value)]


def args_digest(args: Any) -> str:
    """The SHA-256 an approval binds a call's arguments with; equal for the same JSON value
    before and after a trip through the database."""
    return hashlib.sha256(json.dumps(_canonical(args)).encode()).hexdigest()


def checked_decision(approval: Approval, call: Mapping[str, Any] | None) -> Decision:
    """What the executing worker does with a decided call: run it only if it was approved
    and the parked call still names the tool and arguments the person approved (by hash);
    anything else is a denial the model sees."""
    decided_by = approval.decided_by.name if approval.decided_by else ""
    if (
        call is None
        or call.get("toolName") != approval.tool_name
        or args_digest(call.get("args") or {}) != approval.args_sha256
    ):
        return Decision(False, "the call changed after the approval was requested; it was not run", decided_by)
    return Decision(approval.status == ApprovalStatus.APPROVED, approval.reason, decided_by)


def request_approvals(turn: Turn, calls: Iterable[Mapping[str, Any]]) -> None:
    """One pending approval per parked call (``{callId, toolName, args}``); a call asked
    about already (a worker that died as the turn parked) keeps its row."""
    for call in calls:
        Approval.objects.get_or_create(
            call_id=call["callId"],
            defaults={
                "session_id": turn.session_id,
                "turn": turn,
                "tool_name": call["toolName"],
                "args": call["args"] or {},
                "args_sha256": args_digest(call["args"]),
            },
        )


def decisions_for(turn: Turn) -> dict[str, Decision]:
    """The decided calls of a parked turn, re-checked here where the calls run: the
    parked call must be the one approved."""
    calls = {call["callId"]: call for call in pending_calls(turn.parked_state or {})}
    return {
        approval.call_id: checked_decision(approval, calls.get(approval.call_id))
        for approval in turn.approvals.exclude(status=ApprovalStatus.PENDING).select_related("decided_by")
    }
