"""Scheduling turns: enqueueing them for a worker, claiming one, settling the session
after a turn ends, and sweeping up what dead workers left. The only module that sends
Celery tasks for turns.

A turn is claimed by a conditional update (queued, or running with an expired lease),
so a duplicate delivery does nothing. While it runs its lease is renewed; a worker that
dies leaves an expiring lease, and the sweeper hands the turn to another worker, at most
``TURN_MAX_ATTEMPTS`` times (then it ends ``turn.failed`` with reason ``worker_lost``).

Tasks are sent by name (``sessions_app.queues``), so this module imports no task
module and the task shims (``sessions_app.tasks``) can import it without a circle.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import connection, transaction
from django.db.models import Exists, F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone
from kombu.exceptions import ChannelError
from kombu.exceptions import OperationalError as BrokerUnavailable

from agent_platform.conf import platform_settings
from agent_platform.rows import columns, instance, width
from agents.events import EventType
from agents.models import Agent
from agents.registry import surface_for_session
from sessions_app.eventlog import NewEvent, append_event, append_events
from sessions_app.models import ACTIVE_TURNS, Event, Session, SessionMode, SessionStatus, Turn, TurnStatus
from sessions_app.queues import QueueKind, TaskName, queue_name, send, turn_lane

logger = logging.getLogger(__name__)


def lease() -> timedelta:
    return timedelta(seconds=platform_settings.TURN_LEASE_SECONDS)


def enqueue_turn(turn_id: str, tenant_id: int) -> None:
    """Hand the turn to a worker, in its tenant's lane. With the broker down the request
    still succeeds: the turn is recorded as queued, and the sweeper hands it out once
    the broker is back."""
    try:
        # The tenant rides along, so the worker serves its first database call in its
        # tenant's turn (messages without it, from earlier releases, still run).
        send(TaskName.RUN_TURN, turn_id, tenant_id, tenant_id=tenant_id)
    except BrokerUnavailable:
        logger.warning("could not enqueue turn %s; the sweeper will", turn_id, exc_info=True)


def dispatch_next(session_id: str) -> None:
    """Hand the session's next queued turn to a worker, unless a turn is running or parked."""
    turns = Turn.objects.filter(session_id=session_id)
    busy = turns.filter(status__in=(TurnStatus.RUNNING, TurnStatus.PARKED))
    # One statement, one snapshot: checked apart, the next turn could be claimed between
    # the check and the pick, and the one after it handed out beside it.
    queued = turns.filter(~Exists(busy), status=TurnStatus.QUEUED)
    next_turn = queued.order_by("created_at").values_list("pk", "session__tenant_id").first()
    if next_turn is not None:
        enqueue_turn(*next_turn)


def claim_turn(turn_id: str, running_here: Callable[[int], int] = lambda tenant_id: 0) -> Turn | None:
    """Take the turn for this worker, or None when it is not ours to run (already
    running under a live lease, finished, or parked).

    The claim commits only if the agent has room under its ``max_running_turns`` (counted
    under the agent row's lock, so the cap holds under any race and a turn over it is
    never seen running) and the tenant is within its fair share of this worker
    (``running_here(tenant_id)``: its turns running in this process).

    Raises:
        AgentAtCapacity: the agent runs ``max_running_turns`` already; the turn stays
            queued (with one ``turn.queued`` event).
        TurnDeferred: the tenant holds its share of this worker while others wait.
    """
    with transaction.atomic():
        turn = _take(turn_id)
        if turn is None:
            return None
        cap = surface_for_session(turn.session).config.max_running_turns
        running = _running_beside(turn) if cap is not None else 0
        at_capacity = cap is not None and running >= cap
        deferred = not at_capacity and _over_fair_share(turn, running_here(turn.session.tenant_id))
        if at_capacity or deferred:
            transaction.set_rollback(True)  # the claim never happened
    if at_capacity:
        _note_queued(turn, running, cap)
        raise AgentAtCapacity(turn.pk)
    if deferred:
        raise TurnDeferred(turn.pk)
    return turn


def _take(turn_id: str) -> Turn | None:
    """The conditional update that claims the turn (queued, or running under an expired
    lease), and the claimed turn with its session and agent; None when not claimable.

    On Postgres it is one statement (``agent_platform.rows``): every turn starts here,
    and the ORM would build the two queries anew each time.
    """
    now = timezone.now()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_claim_sql(), {"turn": turn_id, "now": now, "lease": now + lease()})
            row = cursor.fetchone()
        if row is None:
            return None
        turn_width, session_width = width(Turn), width(Session)
        turn = instance(Turn, row[:turn_width])
        turn.session = instance(Session, row[turn_width : turn_width + session_width])
        turn.session.agent = instance(Agent, row[turn_width + session_width :])
        return turn
    claimed = Turn.objects.filter(
        Q(pk=turn_id) & (Q(status=TurnStatus.QUEUED) | Q(status=TurnStatus.RUNNING, lease_until__lt=now))
    ).update(
        status=TurnStatus.RUNNING,
        attempts=F("attempts") + 1,
        lease_until=now + lease(),
        started_at=Coalesce("started_at", now),
    )
    if not claimed:
        return None
    return Turn.objects.select_related("session__agent").get(pk=turn_id)


@functools.cache
def _claim_sql() -> str:
    turns, sessions, agents = Turn._meta.db_table, Session._meta.db_table, Agent._meta.db_table
    running, queued = TurnStatus.RUNNING.value, TurnStatus.QUEUED.value
    # Table names and status values are ours; the rest are parameters.
    return f"""
        WITH claimed AS (
            UPDATE {turns} SET status = '{running}', attempts = attempts + 1, lease_until = %(lease)s,
                started_at = COALESCE(started_at, %(now)s)
            WHERE id = %(turn)s AND (status = '{queued}' OR (status = '{running}' AND lease_until < %(now)s))
            RETURNING *
        )
        SELECT {columns(Turn, "t")}, {columns(Session, "s")}, {columns(Agent, "a")}
        FROM claimed t JOIN {sessions} s ON s.id = t.session_id JOIN {agents} a ON a.id = s.agent_id
    """  # noqa: S608


def _running_beside(turn: Turn) -> int:
    """The agent's other running turns, counted by one claimer at a time (the agent row's
    lock, held until the claim commits). A shared agent (from ``AGENTS_DIR``, no tenant)
    counts only the turn's tenant's: each tenant has its own ``max_running_turns`` of it,
    so one tenant cannot fill the cap for everyone."""
    agent_id = turn.session.agent_id
    # Only this tenant's turns of a shared agent; any tenant's of a tenant's own agent.
    tenant_id = turn.session.tenant_id if turn.session.agent.tenant_id is None else None
    if connection.vendor != "postgresql":
        Agent.objects.select_for_update().filter(pk=agent_id).first()
        running = Turn.objects.filter(session__agent_id=agent_id, status=TurnStatus.RUNNING).exclude(pk=turn.pk)
        if tenant_id is not None:
            running = running.filter(session__tenant_id=tenant_id)
        return running.count()
    # Written out (every claim of a capped agent's turn): two statements, not one, since the
    # count's snapshot must be taken once the lock is held, to see the last claimer's turn.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {Agent._meta.db_table} WHERE id = %s FOR UPDATE", [agent_id])  # noqa: S608
        cursor.execute(_running_beside_sql(), {"agent": agent_id, "turn": turn.pk, "tenant": tenant_id})
        row = cursor.fetchone()
    return int(row[0]) if row else 0


@functools.cache
def _running_beside_sql() -> str:
    return (
        f"SELECT count(*) FROM {Turn._meta.db_table} t JOIN {Session._meta.db_table} s ON s.id = t.session_id "  # noqa: S608
        f"WHERE s.agent_id = %(agent)s AND t.status = '{TurnStatus.RUNNING.value}' AND t.id <> %(turn)s "
        "AND (%(tenant)s::bigint IS NULL OR s.tenant_id = %(tenant)s::bigint)"
    )


def _note_queued(turn: Turn, running: int, cap: int | None) -> None:
    """One ``turn.queued`` per turn, however often it waits for room."""
    if not Event.objects.filter(session_id=turn.session_id, turn=turn, type=EventType.TURN_QUEUED).exists():
        append_event(turn.session_id, EventType.TURN_QUEUED, {"runningTurns": running, "cap": cap}, turn.pk)


class AgentAtCapacity(Exception):
    """The agent already runs ``max_running_turns`` turns; this one waits its turn."""


class TurnDeferred(Exception):
    """The turn's tenant holds its share of this worker's turn slots while other tenants'
    turns wait; it goes back to its lane and runs once a slot is its to take."""


def _over_fair_share(turn: Turn, running_for_tenant: int) -> bool:
    """Whether the turn's tenant already runs its share (``TURN_TENANT_SHARE`` of
    ``TURN_CONCURRENCY``) of this worker's turns while another tenant's turns wait in
    the broker; a tenant alone may use every slot."""
    share = max(1, int(platform_settings.TURN_TENANT_SHARE * platform_settings.TURN_CONCURRENCY))
    return running_for_tenant >= share and others_waiting(turn.session.tenant_id)


def others_waiting(tenant_id: int) -> bool:
    """Whether turns wait in the broker in a lane other than the tenant's (a tenant that
    shares its lane with the one asking is not seen: lanes are a hash of the tenant)."""
    conf = current_app.conf
    lanes = conf.platform_turn_lanes
    own = turn_lane(tenant_id, lanes)
    others = [queue_name(conf.task_default_queue, QueueKind.TURNS, lane) for lane in range(lanes) if lane != own]
    try:
        # A pooled broker connection (the stubs call it a Producer).
        connection: Any = current_app.pool.acquire(block=True)
        with connection:
            channel = connection.default_channel
            for queue in others:
                with contextlib.suppress(ChannelError):  # a lane never used has no queue yet
                    if channel.queue_declare(queue, passive=True).message_count:
                        return True
    except BrokerUnavailable:
        logger.warning("cannot see the other lanes; the turn runs", exc_info=True)
    return False


def settle_session(session_id: str) -> None:
    """After a turn ended: run the next queued one, or record that the session waits
    (chat) or is over (task).

    Every turn ends here, so its few statements are written out (the ORM would spend
    longer building them than the database running them); the lock comes first, and
    each later statement sees what committed before it was granted.
    """
    # Inside a caller's transaction (a worker ending a turn), that one: no savepoint's round trips.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute(_settle_sql("lock"), [session_id])
        row = cursor.fetchone()
        if row is None:
            return
        status, mode = row
        cursor.execute(_settle_sql("active"), [session_id, *(str(active) for active in ACTIVE_TURNS)])
        if cursor.fetchone() is not None:
            transaction.on_commit(lambda: dispatch_next(session_id))
            return
        if status != SessionStatus.RUNNING:
            return
        if mode == SessionMode.TASK:
            cursor.execute(_settle_sql("last"), [session_id])
            last = cursor.fetchone()
            failed = last is None or last[0] == TurnStatus.FAILED
            status = SessionStatus.FAILED if failed else SessionStatus.COMPLETED
            event = EventType.SESSION_FAILED if failed else EventType.SESSION_COMPLETED
        else:
            status, event = SessionStatus.WAITING, EventType.SESSION_WAITING
        cursor.execute(_settle_sql("status"), [str(status), timezone.now(), session_id])
        append_events(session_id, [NewEvent(event, {})])


@functools.cache
def _settle_sql(name: str) -> str:
    sessions, turns = Session._meta.db_table, Turn._meta.db_table
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""  # SQLite: one writer anyway
    active = ", ".join(["%s"] * len(ACTIVE_TURNS))
    # Table names are ours; the values are parameters.
    return {
        "lock": f"SELECT status, mode FROM {sessions} WHERE id = %s{lock}",  # noqa: S608
        "active": f"SELECT 1 FROM {turns} WHERE session_id = %s AND status IN ({active}) LIMIT 1",  # noqa: S608
        "last": f"SELECT status FROM {turns} WHERE session_id = %s ORDER BY created_at DESC LIMIT 1",  # noqa: S608
        "status": f"UPDATE {sessions} SET status = %s, updated_at = %s WHERE id = %s",  # noqa: S608
    }[name]


def sweep_turns() -> int:
    """Hand turns whose worker died (expired lease) and queued turns nobody picked up
    back to the workers, and settle sessions whose worker died between recording its
    turn's end and settling (still running with no turn to run); returns how many turns
    and sessions it moved on."""
    now = timezone.now()
    stuck = list(
        Turn.objects.filter(status=TurnStatus.RUNNING, lease_until__lt=now).values_list("pk", "session__tenant_id")
    )
    for turn_id, tenant_id in stuck:
        enqueue_turn(turn_id, tenant_id)
    waiting = (
        Turn.objects.filter(status=TurnStatus.QUEUED, created_at__lt=now - lease())
        .values_list("session_id", flat=True)
        .distinct()
    )
    sessions = list(waiting)
    for session_id in sessions:
        dispatch_next(session_id)
    unsettled = list(
        Session.objects.filter(status=SessionStatus.RUNNING, updated_at__lt=now - lease())
        .exclude(turns__status__in=ACTIVE_TURNS)
        .values_list("pk", flat=True)
    )
    for session_id in unsettled:
        settle_session(session_id)  # under the session's lock: a worker settling it too does nothing
    return len(stuck) + len(sessions) + len(unsettled)
