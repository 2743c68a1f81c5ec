"""Working on a turn in a worker: claim it (``sessions_app.scheduling``), run or resume
it with the runtime on the process's turn loop (``sessions_app.turn_loop``), record
what came out, and move the session on.

A task thread calls ``execute_turn``; the turn itself runs on the loop beside the
process's other turns. Its database work is three kinds of call on the loop's
database threads: ``_begin`` (claim, checks, everything the runtime needs, in one
call), the sink's appends (group commits), and ``_end`` (the turn's end event, which
the sink holds back, its record and the session's settling, in one transaction).
While it runs, its lease is renewed and its cancel flag watched by the loop.
A turn taken up again after its worker was lost resumes from its log
(``agents.runtime.replay``): nothing logged is emitted or run twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from agent_platform import request_ids, rls, rows
from agent_platform.conf import platform_settings, workspaces_dir
from agent_platform.crash import crash_point
from agents import events
from agents.config import runtime_settings
from agents.discovery import AgentSurface
from agents.events import INTERRUPTED, TURN_ENDS, EventType
from agents.registry import surface_for_session
from agents.runtime.conversation import message_from_dict, message_to_dict
from agents.runtime.providers.base import Message
from agents.runtime.replay import Journal
from agents.runtime.turn import Decision, TurnOutcome, TurnRequest, pending_calls, resume_turn, run_turn
from agents.secrets import adeclared_secrets
from sessions_app.approvals import decisions_for, request_approvals
from sessions_app.channel_state import channel_info
from sessions_app.dispatch import remember_session
from sessions_app.eventlog import Fence, NewEvent, StaleAttempt, append_events, events_of_turn
from sessions_app.host import DatabaseFileStore, host_for, memory_files, session_arms, session_info
from sessions_app.logs import agent_log_tags
from sessions_app.models import Session, SessionPurpose, Turn, TurnStatus
from sessions_app.records import ab
from sessions_app.records.artifacts import SessionArtifacts
from sessions_app.scheduling import claim_turn, settle_session
from sessions_app.sink import DatabaseSink
from sessions_app.telemetry import export_turn
from sessions_app.turn_loop import LeaseLost, TurnLoop, turn_loop, turn_tenant

logger = logging.getLogger(__name__)


@dataclass
class _Started:
    """A claimed turn with everything the runtime needs to run it."""

    turn: Turn
    surface: AgentSurface
    request: TurnRequest
    journal: Journal | None
    decisions: dict[str, Decision] | None  # a parked turn resuming: its decided calls


# The conversation so far of recently served sessions, so that a follow-up reads only the
# turns completed since (turn 1,000 of a session costs what turn 2 does): per session, the
# creation time of the last completed turn included, and the messages up to it. Completed
# turns never change, and a session's turns complete in the order they were created (one
# runs at a time, in order), so what is cached stays the prefix of any later turn's history.
HISTORY_CACHE_SESSIONS = 256
_histories: OrderedDict[str, tuple[datetime, list[Message]]] = OrderedDict()
_histories_lock = threading.Lock()


def _history(session: Session, before: Turn) -> list[Message]:
    """The messages of the session's completed turns created before ``before``."""
    with _histories_lock:
        cached = _histories.get(session.pk)
    if cached is not None and cached[0] >= before.created_at:
        cached = None  # a turn older than what is cached (taken up again): read it all
    found = _completed_turns(session.pk, before.created_at, cached[0] if cached is not None else None)
    messages = [*(cached[1] if cached is not None else []), *(message_from_dict(m) for _, c in found for m in c)]
    last = found[-1][0] if found else (cached[0] if cached is not None else None)
    if last is not None:
        with _histories_lock:
            _histories[session.pk] = (last, messages)
            _histories.move_to_end(session.pk)
            while len(_histories) > HISTORY_CACHE_SESSIONS:
                _histories.popitem(last=False)
    return list(messages)


def _completed_turns(session_id: str, before: datetime, after: datetime | None) -> list[tuple[datetime, list[Any]]]:
    """(created_at, conversation) of the session's completed turns created between
    ``after`` (None: from the start) and ``before``, oldest first. Only these columns: a
    long session has hundreds of earlier turns. Every turn reads it (most often finding
    one turn, or none), so on Postgres the query is written out (``agent_platform.rows``)."""
    if connection.vendor != "postgresql":
        turns = Turn.objects.filter(session_id=session_id, status=TurnStatus.COMPLETED, created_at__lt=before)
        if after is not None:
            turns = turns.filter(created_at__gt=after)
        return list(turns.order_by("created_at").values_list("created_at", "conversation"))
    with connection.cursor() as cursor:
        cursor.execute(_completed_turns_sql(), {"session": session_id, "before": before, "after": after})
        found = cursor.fetchall()
    convert = rows.converter(Turn, "conversation")
    return [(created_at, convert(conversation)) for created_at, conversation in found]


@functools.cache
def _completed_turns_sql() -> str:
    return (
        f"SELECT created_at, conversation FROM {Turn._meta.db_table} "  # noqa: S608
        f"WHERE session_id = %(session)s AND status = '{TurnStatus.COMPLETED.value}' AND created_at < %(before)s "
        "AND (%(after)s::timestamptz IS NULL OR created_at > %(after)s::timestamptz) ORDER BY created_at"
    )


def _workspace(session: Session) -> Path:
    return workspaces_dir(platform_settings.VAR_DIR) / session.pk


def _request(turn: Turn, surface: AgentSurface) -> TurnRequest:
    session = turn.session
    stores = {
        "session": DatabaseFileStore(session.tenant_id, session.agent_id, session.pk),
        "deployment": DatabaseFileStore(session.tenant_id, session.agent_id, None),
    }
    # Arms are assigned only from the agent's experiments: with none, there is nothing to read.
    arms = session_arms(session) if surface.experiments else {}
    host = host_for(session)
    workspace = _workspace(session)
    # A new workspace shows the agent's memory as it is now (later turns keep that copy);
    # eval sessions get none, so a case's result does not drift as the journal grows.
    fresh = not workspace.exists() and session.purpose != SessionPurpose.EVAL
    return TurnRequest(
        session=session_info(session, arms),
        turn_id=turn.pk,
        message=turn.message,
        history=_history(session, turn),
        arms=arms,
        workspace=workspace,
        attachments=dict(turn.attachments),
        memory=memory_files(session.tenant_id, session.agent_id) if fresh else None,
        host=host,
        artifacts=SessionArtifacts(session, turn.pk),
        file_store_for=stores.__getitem__,
        channel=channel_info(session),
        mcp=host.mcp,
        load_secrets=functools.partial(adeclared_secrets, session.agent),
    )


def _end_without_running(turn: Turn, message: str, reason: str | None = None) -> None:
    _fail(turn, message, reason)
    settle_session(turn.session_id)
    _observe(turn, surface_for_session(turn.session))


def _observe(turn: Turn, surface: AgentSurface) -> None:
    """What watches a settled turn, each observe-only: the session's A/B samples, then the
    turn's spans and metrics."""
    if surface.experiments:
        ab.record_sample(turn.session, surface)
    export_turn(turn, surface)


def _begin(turn_id: str, loop: TurnLoop) -> _Started | None:
    """Claim the turn and gather what the runtime needs; None when there is nothing to run
    (not ours, or ended here without running).

    Raises:
        AgentAtCapacity: the agent's ``max_running_turns`` are all taken; retry later.
        TurnDeferred: the tenant holds its share of this worker while others wait.
    """
    turn = claim_turn(turn_id, loop.running_for)
    if turn is None:
        return None
    remember_session(turn.session)  # for the dispatch triggers of the turn's appends
    journal = _journal(turn) if turn.attempts > 1 else None
    logged_end = journal.end if journal is not None else None
    if logged_end is not None and logged_end[0] == EventType.TURN_FAILED:
        # A lost attempt ended it: record that.
        _end_without_running(turn, str(logged_end[1].get("message", "")))
        return None
    if turn.attempts > platform_settings.TURN_MAX_ATTEMPTS and logged_end is None:
        lost = f"the worker running this turn was lost {turn.attempts - 1} times; giving up"
        _end_without_running(turn, lost, "worker_lost")
        return None
    if turn.cancel_requested:
        _end_without_running(turn, INTERRUPTED)
        return None
    surface = surface_for_session(turn.session)
    if surface.errors:
        _end_without_running(turn, f"agent {turn.session.agent.slug!r} has errors: {surface.errors[0]}")
        return None
    try:
        decisions = decisions_for(turn) if turn.parked_state else None
        return _Started(turn, surface, _request(turn, surface), journal, decisions)
    except (OperationalError, InterfaceError):
        raise
    except Exception as failure:
        logger.exception("turn %s failed inside the platform", turn.pk, extra=_line_tags(turn))
        _platform_failure(turn, failure)
        return None


def _tags(turn: Turn) -> dict[str, Any]:
    """Log tags that put the line on the agent's /v1/logs."""
    session = turn.session
    return {"agent_slug": session.agent.slug, "session_id": session.pk, "tenant_id": session.tenant_id}


def _line_tags(turn: Turn) -> dict[str, Any]:
    """``_tags`` and the request id, for the platform's own lines about the turn."""
    return {**_tags(turn), "request_id": turn.request_id}


def _platform_failure(turn: Turn, failure: Exception) -> None:
    """A fault of the platform's, not the turn's (logged by the caller): the turn ends
    ``turn.failed`` saying so."""
    _end_without_running(turn, f"the platform failed running this turn: {type(failure).__name__}: {failure}")


def _end(
    turn: Turn,
    outcome: TurnOutcome,
    history_length: int,
    surface: AgentSurface,
    turn_end: list[NewEvent],
    fence: Fence | None,
) -> None:
    """Write the turn's end (``turn_end``, held by its sink), record the outcome, then move
    the session on, in one transaction: readers are woken once, and see the end with the
    session settled. Its append takes the session row's lock first, as a follow-up does
    (one lock order). Without an end to write (a parked turn, or one whose end an earlier
    attempt logged), recording and settling are two transactions, since recording locks
    the turn before settling locks the session.
    An ended turn's spans are built from its log last.

    Raises:
        StaleAttempt: another attempt has the turn now; nothing is written.
    """
    # Without an end, _record and settle_session are each their own transaction.
    with transaction.atomic() if turn_end else contextlib.nullcontext():
        if turn_end:
            append_events(turn.session_id, turn_end, fence)
        _record(turn, outcome, history_length)
        crash_point("before-settle")  # fault tests: the turn is recorded (or, with an end, being), not settled
        settle_session(turn.session_id)
    if outcome.status != "parked":
        _observe(turn, surface)


def _journal(turn: Turn) -> Journal:
    """What the turn's earlier attempts logged."""
    return Journal(events_of_turn(turn.session_id, turn.pk, turn.created_at).values_list("type", "data"))


def _fail(turn: Turn, message: str, reason: str | None = None) -> None:
    """End the turn with ``turn.failed``, unless its end is in the log already (a lost
    attempt logged it before its worker died): then the row says what the log says."""
    with transaction.atomic():
        logged_end = (
            events_of_turn(turn.session_id, turn.pk, turn.created_at)
            .filter(type__in=TURN_ENDS)
            .values_list("type", flat=True)
            .first()
        )
        status = TurnStatus.COMPLETED if logged_end == EventType.TURN_COMPLETED else TurnStatus.FAILED
        ended = Turn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(
            status=status, failure_message=message, ended_at=timezone.now(), lease_until=None
        )
        if ended and logged_end is None:
            append_events(
                turn.session_id, [NewEvent(EventType.TURN_FAILED, events.turn_failed(message, reason), turn.pk)]
            )


def _record(turn: Turn, outcome: TurnOutcome, history_length: int) -> None:
    now = timezone.now()
    with transaction.atomic(savepoint=False):  # inside _end's transaction: no savepoint's round trips
        if outcome.status == "parked" and outcome.state is not None:
            # attempts=0: resuming after the decision is not a lost worker's retry.
            Turn.objects.filter(pk=turn.pk).update(
                status=TurnStatus.PARKED,
                parked_state=outcome.state,
                lease_until=None,
                attempts=0,
                usage=outcome.usage.as_dict(),
            )
            request_approvals(turn, pending_calls(outcome.state))
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
        rows.update(Turn, turn.pk, **fields)  # written out: once a turn, the ORM would build it anew


async def _then_drain(sink: DatabaseSink, body: Any) -> TurnOutcome:
    """The turn's body, then (even when it fails) every event it emitted in the log."""
    try:
        outcome: TurnOutcome = await body
        return outcome
    finally:
        await sink.drain()


async def _work_on(turn_id: str, tenant_id: int | None, loop: TurnLoop, sink_of_this_turn: list[DatabaseSink]) -> None:
    turn_tenant.set(tenant_id)  # this task's own context: its database calls are the tenant's
    started = await loop.db(_begin, turn_id, loop)
    if started is None:
        return
    turn, request = started.turn, started.request
    turn_tenant.set(turn.session.tenant_id)
    if turn.request_id:  # this task's own context, like the tenant: the rest is the turn's request's
        request_ids.enter(turn.request_id)
    try:
        sink = DatabaseSink(turn.session_id, db=loop.db, fence=Fence(turn.pk, turn.attempts), hold_turn_end=True)
        settings = runtime_settings(started.surface, turn.session.purpose)
        sink_of_this_turn.append(sink)
        if started.decisions is not None:
            state = turn.parked_state or {}
            body = resume_turn(started.surface, request, state, started.decisions, sink, settings, started.journal)
        else:
            body = run_turn(started.surface, request, sink, settings, started.journal)
        # The task copies the context: what the agent's code logs (any logger) is the agent's,
        # under the id of the request that asked for the turn (entered above), and what it
        # reads and writes is its tenant's (claiming and settling are the platform's).
        with agent_log_tags(started.surface, **_tags(turn)), rls.tenant_scope(turn.session.tenant_id):
            task = asyncio.ensure_future(_then_drain(sink, body))
        lease_lost = False

        def cancel() -> None:
            request.signal.cancel()
            task.cancel()

        def abandon() -> None:
            nonlocal lease_lost
            lease_lost, sink.closed = True, True  # what the cancelled runtime says is not recorded
            cancel()

        with loop.running(turn.pk, turn.session.tenant_id, cancel, abandon):
            # A turn past its time limit is stopped like one a person stopped.
            timer = asyncio.get_running_loop().call_later(platform_settings.TURN_TIME_LIMIT, cancel)
            try:
                outcome = await task
            finally:
                timer.cancel()
        if lease_lost:
            raise LeaseLost(turn.pk)
        if sink.closed:
            return  # the worker is going away mid-turn (see execute_turn): nothing more is recorded
        await loop.db(_end, turn, outcome, len(request.history), started.surface, sink.held, sink.fence)
    except StaleAttempt:
        # Another worker took the turn up (this one's lease ran out): it is theirs now.
        logger.warning("turn %s: attempt %d was overtaken; stopped", turn.pk, turn.attempts, extra=_line_tags(turn))
    except (OperationalError, InterfaceError):
        raise  # the database, not the turn: the task retries and resumes it from the log
    except Exception as failure:
        logger.exception("turn %s failed inside the platform", turn.pk, extra=_line_tags(turn))
        await loop.db(_platform_failure, turn, failure)


def execute_turn(turn_id: str, tenant_id: int | None = None) -> None:
    """Run or resume the turn if this worker can claim it (the Celery task's body): on
    the process's turn loop, waiting here until it has ended.

    Raises:
        AgentAtCapacity: the agent's ``max_running_turns`` are all taken; retry later.
        TurnDeferred: the tenant holds its share of this worker while others wait.
        OperationalError: the database went away; retry once the lease has run out.
        LeaseLost: the lease could not be renewed; likewise.
    """
    loop = turn_loop()
    sinks: list[DatabaseSink] = []

    def abandon() -> None:
        # The worker is going away mid-turn (SystemExit from a terminating worker, a time
        # limit): what the cancelled runtime says then ("turn interrupted") is not
        # recorded, because the turn is not over; it is taken up again from its log.
        for sink in sinks:
            sink.closed = True

    loop.run(_work_on(turn_id, tenant_id, loop, sinks), on_abandon=abandon)
