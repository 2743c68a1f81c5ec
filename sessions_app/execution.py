"""Running a turn on a worker: claim it, run (or resume) it with the runtime,
record what came out, and move the session on.

A turn is claimed by a conditional update (queued, or running with an expired
lease), so a duplicate delivery does nothing. While it runs, its lease is renewed
and its cancel flag watched; a worker that dies leaves an expiring lease, and the
sweeper hands the turn to another worker, at most ``TURN_MAX_ATTEMPTS`` times
(then it ends ``turn.failed`` with reason ``worker_lost``). A turn taken up again
resumes from its log (``agents.runtime.replay``): nothing logged is emitted or run
twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from datetime import timedelta
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async as in_thread
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from agent_platform.conf import platform_settings
from agents.config import runtime_settings
from agents.models import Agent
from agents.registry import surface_for
from agents.runtime.conversation import message_from_dict, message_to_dict
from agents.runtime.prompt import instructions_text
from agents.runtime.replay import Journal
from agents.runtime.turn import (
    Decision,
    TurnOutcome,
    TurnRequest,
    pending_calls,
    resume_turn,
    run_turn,
)
from agents.runtime.workspace import prepare_workspace
from agents.sdk import ToolContext
from sessions_app.eventlog import NewEvent, append_event, append_events
from sessions_app.events import EventType
from sessions_app.host import DatabaseFileStore, host_for, session_info
from sessions_app.models import Approval, ApprovalStatus, Event, Session, Turn, TurnStatus
from sessions_app.services import INTERRUPTED, args_digest, checked_decision, settle_session
from sessions_app.sink import DatabaseSink

logger = logging.getLogger(__name__)
CANCEL_POLL_SECONDS = 0.25


def _lease() -> timedelta:
    return timedelta(seconds=platform_settings.TURN_LEASE_SECONDS)


def claim_turn(turn_id: str) -> Turn | None:
    """Take the turn for this worker, or None when it is not ours to run (already
    running under a live lease, finished, or parked)."""
    now = timezone.now()
    claimed = Turn.objects.filter(
        Q(pk=turn_id) & (Q(status=TurnStatus.QUEUED) | Q(status=TurnStatus.RUNNING, lease_until__lt=now))
    ).update(
        status=TurnStatus.RUNNING,
        attempts=F("attempts") + 1,
        lease_until=now + _lease(),
        started_at=Coalesce("started_at", now),
    )
    if not claimed:
        return None
    return Turn.objects.select_related("session__agent").get(pk=turn_id)


def _history(session: Session, before: Turn) -> list[Any]:
    turns = session.turns.filter(status=TurnStatus.COMPLETED, created_at__lt=before.created_at).order_by("created_at")
    # Only the column needed: a long session has hundreds of earlier turns.
    conversations = turns.values_list("conversation", flat=True)
    return [message_from_dict(message) for conversation in conversations for message in conversation]


def _workspace(session: Session) -> Path:
    return Path(platform_settings.VAR_DIR) / "workspaces" / session.pk


def _request(turn: Turn, surface: Any) -> TurnRequest:
    session = turn.session
    info = session_info(session)
    stores = {
        "session": DatabaseFileStore(session.tenant_id, session.agent_id, session.pk),
        "deployment": DatabaseFileStore(session.tenant_id, session.agent_id, None),
    }
    workspace = _workspace(session)
    instructions = asyncio.run(instructions_text(surface, ToolContext(session=info)))
    files = prepare_workspace(workspace, surface, instructions, turn.attachments)
    return TurnRequest(
        session=info,
        turn_id=turn.pk,
        message=turn.message,
        history=_history(session, turn),
        arms={a.experiment: a.arm for a in session.ab_assignments.all()},
        workspace=workspace,
        workspace_files=files,
        host=host_for(session),
        file_store_for=stores.__getitem__,
    )


async def _watched(turn_id: str, request: TurnRequest, body: Any) -> TurnOutcome:
    """Run ``body`` while renewing the lease and watching the cancel flag."""
    task = asyncio.ensure_future(body)
    renew_every = max(platform_settings.TURN_LEASE_SECONDS / 3, CANCEL_POLL_SECONDS)
    last_renewal = asyncio.get_running_loop().time()
    while not task.done():
        await asyncio.wait({task}, timeout=CANCEL_POLL_SECONDS)
        if task.done():
            break
        turn = await in_thread(Turn.objects.filter(pk=turn_id).values("cancel_requested").first)()
        if turn is None or turn["cancel_requested"]:
            request.signal.cancel()
            task.cancel()
            break
        now = asyncio.get_running_loop().time()
        if now - last_renewal >= renew_every:
            await in_thread(Turn.objects.filter(pk=turn_id).update)(lease_until=timezone.now() + _lease())
            last_renewal = now
    return await task


async def _then_drain(sink: DatabaseSink, body: Awaitable[TurnOutcome]) -> TurnOutcome:
    """The turn's body, then (even when it fails) every event it emitted in the log."""
    try:
        return await body
    finally:
        await sink.drain()


def _run_to_end(sink: DatabaseSink, body: Any) -> TurnOutcome:
    """``asyncio.run(body)``, except that when something stops the loop from outside
    (SystemExit from a terminating worker, a time limit) the sink closes before the
    turn's tasks are cancelled."""
    with asyncio.Runner() as runner:
        try:
            outcome: TurnOutcome = runner.run(body)
        except BaseException:
            sink.closed = True
            raise
    return outcome


def _decisions(turn: Turn) -> dict[str, Decision]:
    # Re-checked here, where the call runs: the parked call must be the one approved.
    calls = {call["callId"]: call for call in pending_calls(turn.parked_state or {})}
    return {
        approval.call_id: checked_decision(approval, calls.get(approval.call_id))
        for approval in turn.approvals.exclude(status=ApprovalStatus.PENDING).select_related("decided_by")
    }


def _journal(turn: Turn) -> Journal:
    """What the turn's earlier attempts logged."""
    events = Event.objects.filter(session_id=turn.session_id, turn_id=turn.pk).order_by("index")
    return Journal(events.values_list("type", "data"))


def _fail(turn: Turn, message: str, reason: str | None = None) -> None:
    """End the turn with ``turn.failed``, unless its end is in the log already (a lost
    attempt logged it before its worker died): then the row says what the log says."""
    ends = (EventType.TURN_COMPLETED, EventType.TURN_FAILED)
    with transaction.atomic():
        logged_end = (
            Event.objects.filter(session_id=turn.session_id, turn_id=turn.pk, type__in=ends)
            .values_list("type", flat=True)
            .first()
        )
        status = TurnStatus.COMPLETED if logged_end == EventType.TURN_COMPLETED else TurnStatus.FAILED
        ended = Turn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(
            status=status, failure_message=message, ended_at=timezone.now(), lease_until=None
        )
        if ended and logged_end is None:
            data = {"message": message, **({"reason": reason} if reason else {})}
            append_events(turn.session_id, [NewEvent(EventType.TURN_FAILED, data, turn.pk)])


def _record(turn: Turn, outcome: TurnOutcome, history_length: int) -> None:
    now = timezone.now()
    with transaction.atomic():
        if outcome.status == "parked" and outcome.state is not None:
            # attempts=0: resuming after the decision is not a lost worker's retry.
            Turn.objects.filter(pk=turn.pk).update(
                status=TurnStatus.PARKED,
                parked_state=outcome.state,
                lease_until=None,
                attempts=0,
                usage=outcome.usage.as_dict(),
            )
            for call in pending_calls(outcome.state):
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
            return
        fields: dict[str, Any] = {
            "ended_at": now,
            "lease_until": None,
            "usage": outcome.usage.as_dict(),
            "cost": outcome.cost,
            "parked_state": None,
        }
        if outcome.status == "completed":
            fields.update(
                status=TurnStatus.COMPLETED,
                conversation=[message_to_dict(m) for m in outcome.messages[history_length:]],
            )
        else:
            fields.update(status=TurnStatus.FAILED, failure_message=outcome.failure or "")
        Turn.objects.filter(pk=turn.pk).update(**fields)


class AgentAtCapacity(Exception):
    """The agent already runs ``max_running_turns`` turns; this one waits its turn."""


def _wait_for_capacity(turn: Turn, cap: int | None) -> None:
    """Give the claim back when the agent runs ``cap`` turns already.

    Raises:
        AgentAtCapacity: the turn is queued again (with one ``turn.queued`` event).
    """
    if cap is None:
        return
    agent_id = turn.session.agent_id
    with transaction.atomic():
        # One claimer at a time per agent counts the others, so the cap holds under races.
        Agent.objects.select_for_update().filter(pk=agent_id).first()
        others = Turn.objects.filter(session__agent_id=agent_id, status=TurnStatus.RUNNING).exclude(pk=turn.pk).count()
        if others < cap:
            return
        Turn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(
            status=TurnStatus.QUEUED, attempts=F("attempts") - 1, lease_until=None
        )
        if not turn.session.events.filter(turn=turn, type=EventType.TURN_QUEUED).exists():
            append_event(turn.session_id, EventType.TURN_QUEUED, {"runningTurns": others, "cap": cap}, turn.pk)
    raise AgentAtCapacity(turn.pk)


def execute_turn(turn_id: str) -> None:
    """Run or resume the turn if this worker can claim it (the Celery task's body).

    Raises:
        AgentAtCapacity: the agent's ``max_running_turns`` are all taken; retry later.
    """
    turn = claim_turn(turn_id)
    if turn is None:
        return
    journal = _journal(turn) if turn.attempts > 1 else None
    logged_end = journal.end if journal is not None else None
    if logged_end is not None and logged_end[0] == EventType.TURN_FAILED:
        _fail(turn, str(logged_end[1].get("message", "")))  # a lost attempt ended it: record that
        settle_session(turn.session_id)
        return
    if turn.attempts > platform_settings.TURN_MAX_ATTEMPTS and logged_end is None:
        _fail(turn, f"the worker running this turn was lost {turn.attempts - 1} times; giving up", "worker_lost")
        settle_session(turn.session_id)
        return
    if turn.cancel_requested:
        _fail(turn, INTERRUPTED)
        settle_session(turn.session_id)
        return
    surface = surface_for(turn.session.agent)
    _wait_for_capacity(turn, surface.config.max_running_turns)
    try:
        if surface.errors:
            _fail(turn, f"agent {turn.session.agent.slug!r} has errors: {surface.errors[0]}")
        else:
            request = _request(turn, surface)
            sink, settings = DatabaseSink(turn.session_id), runtime_settings()
            if turn.parked_state:
                decisions = _decisions(turn)
                body = resume_turn(surface, request, turn.parked_state, decisions, sink, settings, journal)
            else:
                body = run_turn(surface, request, sink, settings, journal)
            outcome = _run_to_end(sink, _watched(turn.pk, request, _then_drain(sink, body)))
            _record(turn, outcome, len(request.history))
    except (OperationalError, InterfaceError):
        raise  # the database, not the turn: the task retries and resumes it from the log
    except Exception as failure:
        logger.exception(
            "turn %s failed inside the platform",
            turn.pk,
            extra={
                "agent_slug": turn.session.agent.slug,
                "session_id": turn.session_id,
                "tenant_id": turn.session.tenant_id,
            },
        )
        _fail(turn, f"the platform failed running this turn: {type(failure).__name__}: {failure}")
    settle_session(turn.session_id)


def sweep_turns() -> int:
    """Hand turns whose worker died (expired lease) and queued turns nobody picked up
    back to the workers; returns how many were handed out."""
    from sessions_app.services import dispatch_next, enqueue_turn

    now = timezone.now()
    stuck = list(Turn.objects.filter(status=TurnStatus.RUNNING, lease_until__lt=now).values_list("pk", flat=True))
    for turn_id in stuck:
        enqueue_turn(turn_id)
    waiting = (
        Turn.objects.filter(status=TurnStatus.QUEUED, created_at__lt=now - _lease())
        .values_list("session_id", flat=True)
        .distinct()
    )
    sessions = list(waiting)
    for session_id in sessions:
        dispatch_next(session_id)
    return len(stuck) + len(sessions)
