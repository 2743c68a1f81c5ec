"""Sessions as their users drive them: start, follow up (with an admission policy),
stop, decide approvals. Each use case locks the session row, records its events and
leaves the running of turns to the Celery task (``sessions_app.execution``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import secrets
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

from agent_platform.models import Principal
from agent_platform.rows import columns, insert, instance
from agents.discovery import AgentSurface
from agents.models import Agent
from agents.runtime.turn import Decision
from agents.runtime.workspace import normalize_workspace_path
from sessions_app.eventlog import NewEvent, append_events
from sessions_app.events import EventType
from sessions_app.models import (
    Admission,
    Approval,
    ApprovalStatus,
    Session,
    SessionMode,
    SessionPurpose,
    SessionStatus,
    Turn,
    TurnStatus,
)

logger = logging.getLogger(__name__)
ACTIVE_TURNS = (TurnStatus.QUEUED, TurnStatus.RUNNING, TurnStatus.PARKED)
INTERRUPTED = "turn interrupted"


class SessionError(Exception):
    """A request the session cannot take; ``status`` and ``code`` are the HTTP answer."""

    status = 409
    code = "conflict"


class SessionBusy(SessionError):
    code = "session_busy"


class TaskSessionClosed(SessionError):
    code = "task_session"


class StaleContinuationToken(SessionError):
    code = "stale_continuation_token"


class UnknownContinuationToken(SessionError):
    status = 404
    code = "session_not_found"


class ApprovalNotFound(SessionError):
    status = 404
    code = "approval_not_found"


class ApprovalAlreadyDecided(SessionError):
    code = "approval_not_pending"


def new_continuation_token(session_id: str) -> str:
    """An opaque token; it rotates on every accepted follow-up."""
    return f"ct_{session_id.removeprefix('ses_')}.{secrets.token_urlsafe(18)}"


def session_for_token(token: str) -> Session:
    """The session a continuation token continues.

    Raises:
        UnknownContinuationToken: the token names no session.
        StaleContinuationToken: the token was valid once but has been rotated since.
    """
    session_part = token.removeprefix("ct_").partition(".")[0]
    session = Session.objects.select_related("agent").filter(pk=f"ses_{session_part}").first()
    if session is None or not token.startswith("ct_"):
        raise UnknownContinuationToken("No session has this continuation token.")
    if session.continuation_token != token:
        raise StaleContinuationToken("This continuation token is stale; use the latest one.")
    return session


def clean_files(files: Mapping[str, str] | None) -> dict[str, str]:
    """Workspace files sent with a message, with their paths normalised.

    Raises:
        WorkspacePathError: for a path outside the workspace or under ``memory/``.
    """
    return {normalize_workspace_path(path): content for path, content in (files or {}).items()}


def _message_event(text: str, turn: Turn, files: Mapping[str, str]) -> NewEvent:
    data: dict[str, Any] = {"text": text}
    if files:
        data["files"] = sorted(files)
    return NewEvent(EventType.MESSAGE_RECEIVED, data, turn.pk)


def start_session(
    agent: Agent,
    surface: AgentSurface,
    principal: Principal,
    *,
    message: str,
    mode: str = SessionMode.CHAT,
    purpose: str = SessionPurpose.LIVE,
    title: str = "",
    files: Mapping[str, str] | None = None,
    dry_run: bool = False,
    default_model: str = "test",
    channel: str = "http",
    continuation_key: str = "",
) -> tuple[Session, Turn]:
    """Create a session with its first turn, queued for a worker.

    Raises:
        IntegrityError: the principal already has a session on this agent and channel
            with this ``continuation_key`` (continue that one instead).
    """
    files = clean_files(files)
    with transaction.atomic():
        session = Session(
            agent=agent,
            principal=principal,
            tenant_id=principal.tenant_id,  # what Session.save() would check
            channel=channel,
            continuation_key=continuation_key,
            mode=mode,
            purpose=purpose,
            title=title,
            dry_run=dry_run,
        )
        session.continuation_token = new_continuation_token(session.id)
        turn = Turn(session=session, message=message, attachments=files)
        _insert_new(session, turn)
        model = surface.config.model or default_model
        append_events(
            session.pk,
            [
                NewEvent(
                    EventType.SESSION_STARTED,
                    {
                        "agent": agent.slug,
                        "channel": channel,
                        "mode": mode,
                        "purpose": purpose,
                        "dryRun": dry_run,
                        "title": title,
                    },
                ),
                NewEvent(EventType.AGENT_BOUND, {"agent": agent.slug, "model": model, "testModel": model == "test"}),
                _message_event(message, turn, files),
            ],
        )
        # A new session has no other turn that could be running: hand this one out.
        transaction.on_commit(lambda: enqueue_turn(turn.pk))
    return session, turn


def _insert_new(*rows: Session | Turn) -> None:
    """Write new sessions and turns: on Postgres in one round trip (``agent_platform.rows``;
    the ORM would take longer to build the statements than to run them), else by ``save()``."""
    if connection.vendor == "postgresql":
        insert(*rows)
        return
    for row in rows:
        row.save(force_insert=True)


def continue_session(
    session: Session, *, message: str, admission: str = Admission.PREEMPT, files: Mapping[str, str] | None = None
) -> Turn:
    """Accept a follow-up by the admission policy; rotates the continuation token.

    Raises:
        TaskSessionClosed: the session is a task (it takes one message).
        SessionBusy: ``reject`` while a turn is active.
    """
    files = clean_files(files)
    if session.mode == SessionMode.TASK:  # a session's mode never changes
        raise TaskSessionClosed("A task session takes no follow-up; start a new session.")
    token = new_continuation_token(session.pk)
    with transaction.atomic():
        # The write takes the session's row lock first, as select_for_update would, in the
        # same round trip: concurrent follow-ups, stops and settling queue here, and the
        # turns read next are those of this moment. A refusal below rolls it back.
        if not _mark_running(session.pk, token):
            raise Session.DoesNotExist(session.pk)
        active = _active_turns(session)
        if active and admission == Admission.REJECT:
            raise SessionBusy("A turn is running; retry later or use another admission policy.")
        queued = [turn for turn in active if turn.status == TurnStatus.QUEUED]
        if active and admission == Admission.COALESCE and queued and queued[-1].admission == Admission.COALESCE:
            turn = queued[-1]
            turn.message = f"{turn.message}\n\n{message}"
            turn.attachments = {**turn.attachments, **files}
            turn.save(update_fields=["message", "attachments"])
        else:
            turn = Turn(session=session, message=message, admission=admission, attachments=files)
            _insert_new(turn)
        append_events(session.pk, [_message_event(message, turn, files)])
        if admission == Admission.PREEMPT:
            _interrupt([t for t in active if t.pk != turn.pk])
        session.status, session.continuation_token = SessionStatus.RUNNING, token
        runnable = _next_to_run(active, turn, admission)
        if runnable is not None:
            transaction.on_commit(lambda: enqueue_turn(runnable.pk))
    return turn


def _mark_running(session_id: str, token: str) -> bool:
    """Set the session running with a new continuation token (taking its row lock);
    False when there is no such session. Written out on Postgres: it is every follow-up's
    first statement, and the ORM would take longer to build it than to run it."""
    now = timezone.now()
    if connection.vendor != "postgresql":
        updated = Session.objects.filter(pk=session_id).update(
            status=SessionStatus.RUNNING, continuation_token=token, updated_at=now
        )
        return bool(updated)
    with connection.cursor() as cursor:
        cursor.execute(_MARK_RUNNING, [SessionStatus.RUNNING.value, token, now, session_id])
        return bool(cursor.rowcount)


# The table and column names are the model's own; the values are parameters.
_MARK_RUNNING = (
    f"UPDATE {Session._meta.db_table} SET status = %s, continuation_token = %s, updated_at = %s WHERE id = %s"  # noqa: S608
)


def _active_turns(session: Session) -> list[Turn]:
    """The session's queued, running and parked turns, oldest first, each with ``session``
    as its ``.session``. Written out on Postgres (``agent_platform.rows``), like
    ``_mark_running``."""
    if connection.vendor != "postgresql":
        return list(session.turns.filter(status__in=ACTIVE_TURNS).order_by("created_at"))
    with connection.cursor() as cursor:
        cursor.execute(_active_turns_sql(), [session.pk, [status.value for status in ACTIVE_TURNS]])
        turns = [instance(Turn, row) for row in cursor.fetchall()]
    for turn in turns:
        turn.session = session
    return turns


@functools.cache
def _active_turns_sql() -> str:
    # The table and column names are the model's own; the values are parameters.
    return (
        f"SELECT {columns(Turn, 't')} FROM {Turn._meta.db_table} t "  # noqa: S608
        "WHERE t.session_id = %s AND t.status = ANY(%s) ORDER BY t.created_at"
    )


def _next_to_run(active: list[Turn], new: Turn, admission: str) -> Turn | None:
    """What ``dispatch_next`` would hand out after a follow-up, from the turns read under
    the session's lock: nothing while a turn runs or is parked (a turn that ends
    dispatches the next), else the oldest queued turn. A turn that ends meanwhile
    settles the session after this commit (its lock waits for ours) and dispatches then."""
    if admission == Admission.PREEMPT:
        # The queued and parked turns were interrupted; a running one ends by itself.
        blocking, queued = [t for t in active if t.status == TurnStatus.RUNNING], [new]
    else:
        blocking = [t for t in active if t.status in (TurnStatus.RUNNING, TurnStatus.PARKED)]
        queued = [t for t in active if t.status == TurnStatus.QUEUED]
        if new not in queued:
            queued.append(new)
    return None if blocking else queued[0]


def _interrupt(turns: list[Turn]) -> None:
    """Stop active turns: a running one is told to stop (its worker ends it), a parked
    or queued one ends here. Each interrupted turn ends ``turn.failed`` "turn interrupted"."""
    for turn in turns:
        if turn.status == TurnStatus.RUNNING:
            Turn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(cancel_requested=True)
            continue
        ended = Turn.objects.filter(pk=turn.pk, status=turn.status).update(
            status=TurnStatus.FAILED, failure_message=INTERRUPTED, ended_at=timezone.now(), parked_state=None
        )
        if ended:
            Approval.objects.filter(turn=turn, status=ApprovalStatus.PENDING).update(
                status=ApprovalStatus.DENIED, reason=INTERRUPTED, decided_at=timezone.now()
            )
            append_events(turn.session_id, [NewEvent(EventType.TURN_FAILED, {"message": INTERRUPTED}, turn.pk)])


def stop_session(session: Session) -> bool:
    """Interrupt the running (or parked) turn without a new message; True when there was one."""
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session.pk)
        current = list(session.turns.filter(status__in=(TurnStatus.RUNNING, TurnStatus.PARKED)))
        _interrupt(current)
        if current:
            transaction.on_commit(lambda: settle_session(session.pk))
    return bool(current)


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
            transaction.on_commit(lambda: enqueue_turn(approval.turn_id))
    approval.refresh_from_db()
    return approval


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


def enqueue_turn(turn_id: str) -> None:
    """Hand the turn to a worker. With the broker down the request still succeeds: the
    turn is recorded as queued, and the sweeper hands it out once the broker is back."""
    from sessions_app.tasks import run_turn

    try:
        run_turn.delay(turn_id)
    except BrokerUnavailable:
        logger.warning("could not enqueue turn %s; the sweeper will", turn_id, exc_info=True)


def dispatch_next(session_id: str) -> None:
    """Hand the session's next queued turn to a worker, unless a turn is running or parked."""
    turns = Turn.objects.filter(session_id=session_id)
    busy = turns.filter(status__in=(TurnStatus.RUNNING, TurnStatus.PARKED))
    # One statement, one snapshot: checked apart, the next turn could be claimed between
    # the check and the pick, and the one after it handed out beside it.
    queued = turns.filter(~Exists(busy), status=TurnStatus.QUEUED)
    next_turn = queued.order_by("created_at").first()
    if next_turn is not None:
        enqueue_turn(next_turn.pk)


def settle_session(session_id: str) -> None:
    """After a turn ended: run the next queued one, or record that the session waits
    (chat) or is over (task)."""
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session_id)
        turns = session.turns.all()
        if turns.filter(status__in=ACTIVE_TURNS).exists():
            transaction.on_commit(lambda: dispatch_next(session_id))
            return
        if session.status != SessionStatus.RUNNING:
            return
        if session.mode == SessionMode.TASK:
            last = turns.order_by("-created_at").first()
            failed = last is None or last.status == TurnStatus.FAILED
            session.status = SessionStatus.FAILED if failed else SessionStatus.COMPLETED
            event = EventType.SESSION_FAILED if failed else EventType.SESSION_COMPLETED
        else:
            session.status, event = SessionStatus.WAITING, EventType.SESSION_WAITING
        session.save(update_fields=["status", "updated_at"])
        append_events(session_id, [NewEvent(event, {})])
