"""Sessions as their users drive them: start, follow up (with an admission policy),
stop. Each use case locks the session row, records its events and leaves the running
of turns to the scheduler (``sessions_app.scheduling``); approvals are decided in
``sessions_app.approvals``.
"""

from __future__ import annotations

import functools
import hmac
import logging
import secrets
from collections.abc import Mapping
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from agent_platform import rls
from agent_platform.auth import AuthenticatedPrincipal
from agent_platform.errors import DomainError
from agent_platform.models import Principal
from agent_platform.rows import columns, insert, instance
from agents import events
from agents.discovery import AgentSurface
from agents.events import INTERRUPTED, EventType
from agents.models import Agent
from agents.runtime.workspace import normalize_workspace_path
from sessions_app import quotas
from sessions_app.access import check_owner
from sessions_app.channel_state import session_for_channel_token
from sessions_app.eventlog import NewEvent, append_events
from sessions_app.models import (
    ABAssignment,
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
from sessions_app.records import ab
from sessions_app.scheduling import ACTIVE_TURNS, enqueue_turn, settle_session
from sessions_app.telemetry import count_session

logger = logging.getLogger(__name__)


class SessionError(DomainError):
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


def new_continuation_token(session_id: str) -> str:
    """An opaque token; it rotates on every accepted follow-up."""
    return f"ct_{session_id.removeprefix('ses_')}.{secrets.token_urlsafe(18)}"


def session_for_token(token: str, agent: Agent, user: AuthenticatedPrincipal) -> Session:
    """The session of ``agent`` a continuation token continues, if ``user`` may use it.

    Ownership is checked before the token itself, so someone else's session answers 403
    whatever token is sent, and the token is compared in constant time.

    Raises:
        UnknownContinuationToken: the token names no session of this agent.
        NotSessionOwner: the session it names belongs to someone else.
        StaleContinuationToken: the token was valid once but has been rotated since.
    """
    session_part = token.removeprefix("ct_").partition(".")[0]
    session = rls.found_across_tenants(  # another tenant's session is 403 too, as by id
        lambda: Session.objects.select_related("agent").filter(pk=f"ses_{session_part}", agent=agent).first()
    )
    if session is None or not token.startswith("ct_"):
        raise UnknownContinuationToken("No session of this agent has this continuation token.")
    check_owner(session, user)
    if not hmac.compare_digest(_bytes(session.continuation_token or ""), _bytes(token)):
        raise StaleContinuationToken("This continuation token is stale; use the latest one.")
    return session


def session_for_any_token(token: str, agent: Agent, surface: AgentSurface, user: AuthenticatedPrincipal) -> Session:
    """The session a continuation token continues: the HTTP API's opaque ``ct_...`` one
    (``session_for_token``) or a channel session's ``channel:key``
    (``channel_state.session_for_channel_token``), with their errors."""
    if ":" not in token and token.startswith("ct_"):  # opaque tokens are URL-safe base64: no ':'
        return session_for_token(token, agent, user)
    return session_for_channel_token(token, agent, surface, user)


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def clean_files(files: Mapping[str, str] | None) -> dict[str, str]:
    """Workspace files sent with a message, with their paths normalised.

    Raises:
        WorkspacePathError: for a path outside the workspace or under ``memory/``.
    """
    return {normalize_workspace_path(path): content for path, content in (files or {}).items()}


def files_size(files: Mapping[str, str]) -> int:
    """The bytes workspace files take (paths and contents, as their turn keeps them)."""
    return sum(len(path.encode()) + len(content.encode("utf-8", "surrogatepass")) for path, content in files.items())


def _message_event(text: str, turn: Turn, files: Mapping[str, str], extra: Mapping[str, Any] | None = None) -> NewEvent:
    data: dict[str, Any] = {"text": text}
    if files:
        data["files"] = sorted(files)
    # Where the message came from when it is not its caller's own (a reminder: ``source``, ``reminderId``).
    data.update(extra or {})
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
        QuotaError: the tenant's quotas or budget refuse it (``sessions_app.quotas``).
    """
    files = clean_files(files)
    with transaction.atomic():
        session = Session(
            agent=agent,
            # A deployed agent's session runs on the revision active now, to its end.
            revision_id=agent.active_revision_id,
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
        # Sticky from here on: the arms are rows written with the session.
        assignments, assigned = ab.assign(surface, session)
        if assignments:
            ABAssignment.objects.bulk_create(assignments)
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
                *assigned,
                NewEvent(EventType.AGENT_BOUND, {"agent": agent.slug, "model": model, "testModel": model == "test"}),
                _message_event(message, turn, files),
            ],
        )
        # Admitted last: the tenant's lock is then held only for the counts and the commit.
        quotas.admit_turn(principal.tenant_id, turn.pk, new_session=session.pk, incoming_bytes=files_size(files))
        # A new session has no other turn that could be running: hand this one out.
        transaction.on_commit(lambda: enqueue_turn(turn.pk, session.tenant_id))
    count_session(surface, purpose)
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
    session: Session,
    *,
    message: str,
    admission: str = Admission.PREEMPT,
    files: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
    rotate_token: bool = True,
) -> Turn:
    """Accept a follow-up by the admission policy; rotates the continuation token.
    ``extra``: more fields for its ``message.received`` (``{"source": "reminder", ...}``).
    ``rotate_token=False`` keeps ``session.continuation_token`` (the platform's own
    follow-ups, whose answer nobody reads; the caller holds the session's row lock, so
    the token it read is the current one).

    Raises:
        TaskSessionClosed: the session is a task (it takes one message).
        SessionBusy: ``reject`` while a turn is active.
        QuotaError: the tenant's quotas or budget refuse a new turn (a ``coalesce``
            into a queued turn makes none).
    """
    files = clean_files(files)
    if session.mode == SessionMode.TASK:  # a session's mode never changes
        raise TaskSessionClosed("A task session takes no follow-up; start a new session.")
    token = (
        new_continuation_token(session.pk)
        if rotate_token or not session.continuation_token
        else session.continuation_token
    )
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
        coalesced = bool(queued) and admission == Admission.COALESCE and queued[-1].admission == Admission.COALESCE
        if coalesced:
            turn = queued[-1]
            quotas.admit_bytes(session.tenant_id, files_size(files))
            turn.message = f"{turn.message}\n\n{message}"
            turn.attachments = {**turn.attachments, **files}
            turn.save(update_fields=["message", "attachments"])
        else:
            turn = Turn(session=session, message=message, admission=admission, attachments=files)
            _insert_new(turn)
        append_events(session.pk, [_message_event(message, turn, files, extra)])
        if not coalesced:
            # A new turn, admitted once written: the tenant's lock is held from here on only.
            quotas.admit_turn(session.tenant_id, turn.pk, incoming_bytes=files_size(files))
        if admission == Admission.PREEMPT:
            _interrupt([t for t in active if t.pk != turn.pk])
        session.status, session.continuation_token = SessionStatus.RUNNING, token
        runnable = _next_to_run(active, turn, admission)
        if runnable is not None:
            transaction.on_commit(lambda: enqueue_turn(runnable.pk, session.tenant_id))
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
    or queued one ends here. Each interrupted turn ends ``turn.failed`` "turn interrupted".

    A queued turn may be claimed by a worker after it was read (claims do not take the
    session's lock): then it is stopped as a running one, and ``turn.status`` says
    RUNNING, so the caller does not hand out another turn beside it."""
    for turn in turns:
        if turn.status == TurnStatus.RUNNING:
            Turn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(cancel_requested=True)
            continue
        ended = Turn.objects.filter(pk=turn.pk, status=turn.status).update(
            status=TurnStatus.FAILED, failure_message=INTERRUPTED, ended_at=timezone.now(), parked_state=None
        )
        if not ended and Turn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(cancel_requested=True):
            turn.status = TurnStatus.RUNNING  # claimed meanwhile: it ends itself, then the next one runs
            continue
        if ended:
            Approval.objects.filter(turn=turn, status=ApprovalStatus.PENDING).update(
                status=ApprovalStatus.DENIED, reason=INTERRUPTED, decided_at=timezone.now()
            )
            append_events(turn.session_id, [NewEvent(EventType.TURN_FAILED, events.turn_failed(INTERRUPTED), turn.pk)])


def stop_session(session: Session, *, drop_queued: bool = False) -> bool:
    """Interrupt the running (or parked) turn without a new message, and with
    ``drop_queued`` the queued turns too (a Slack ``stop``); True when there was one."""
    stopping = (TurnStatus.RUNNING, TurnStatus.PARKED, *((TurnStatus.QUEUED,) if drop_queued else ()))
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session.pk)
        current = list(session.turns.filter(status__in=stopping).order_by("created_at"))
        _interrupt(current)
        if current:
            transaction.on_commit(lambda: settle_session(session.pk))
    return bool(current)


def stop_turn(turn: Turn) -> bool:
    """Interrupt one turn (queued, running or parked), leaving the session's others be
    (an A2A ``CancelTask``); False when it has ended already."""
    with transaction.atomic():
        Session.objects.select_for_update().filter(pk=turn.session_id).first()
        turn = Turn.objects.select_related("session").get(pk=turn.pk)
        if turn.status not in ACTIVE_TURNS:
            return False
        _interrupt([turn])
        transaction.on_commit(lambda: settle_session(turn.session_id))
    return True
