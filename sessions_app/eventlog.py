"""The session event log: the one way events are written.

Indexes are allocated from ``Session.next_event_index`` in the same transaction
as the insert. The ``UPDATE ... RETURNING`` takes the session row's lock, so
concurrent appenders to one session queue behind each other, and a rolled-back
append rolls its counter back too: indexes stay gapless and unique whatever runs
concurrently. The ``(session, index)`` unique constraint is the backstop.

After the transaction commits, the session's doorbell rings
(``sessions_app.doorbell.ring``): a small "appended up to N" signal with no event in
it, once per transaction however many appends it made. Stream readers always read
the events themselves from the table, so a lost signal delays, never loses.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from agent_platform.rows import columns, instance
from agents.events import TERMINAL_SESSION_EVENTS, EventType
from sessions_app import doorbell
from sessions_app.dispatch import request_dispatch
from sessions_app.models import Event, Session, Turn, TurnStatus


class UnknownSession(LookupError):
    """Appending to a session that does not exist."""


class StaleAttempt(Exception):
    """Appending for an attempt at a turn that is no longer the turn's current one
    (another worker took the turn up after this attempt's lease ran out): nothing is
    written, and the stale attempt stops."""


@dataclass(frozen=True)
class Fence:
    """Appends made for one attempt at a turn: they are written only while the turn is
    running under that attempt (its ``attempts`` counter), so a worker that lost its
    lease cannot write beside the attempt that took the turn over."""

    turn_id: str
    attempt: int


@dataclass(frozen=True)
class NewEvent:
    """An event to append; the log gives it its index and time."""

    type: EventType
    data: Mapping[str, Any] = field(default_factory=dict)
    turn_id: str | None = None


def _fence_clause(fence: Fence | None) -> tuple[str, list[Any]]:
    """The condition an append with ``fence`` adds to its reservation, and its values."""
    if fence is None:
        return "", []
    turns = Turn._meta.db_table
    # The table name is ours; the values are parameters.
    clause = f" AND EXISTS (SELECT 1 FROM {turns} WHERE id = %s AND attempts = %s AND status = %s)"  # noqa: S608
    return clause, [fence.turn_id, fence.attempt, TurnStatus.RUNNING]


def _not_written(session_id: str, fence: Fence | None) -> Exception:
    if fence is not None and Session.objects.filter(pk=session_id).exists():
        return StaleAttempt(f"turn {fence.turn_id} is no longer run by attempt {fence.attempt}")
    return UnknownSession(session_id)


def _reserve_indexes(session_id: str, count: int, fence: Fence | None = None) -> int:
    """Advance the session's counter by ``count``; returns the first reserved index.

    Raises:
        UnknownSession: when no session has this id.
        StaleAttempt: ``fence`` names an attempt that is not the turn's current one.
    """
    table = Session._meta.db_table
    clause, values = _fence_clause(fence)
    with connection.cursor() as cursor:
        # The table name is ours; the values are parameters.
        sql = f"UPDATE {table} SET next_event_index = next_event_index + %s WHERE id = %s{clause}"  # noqa: S608
        cursor.execute(f"{sql} RETURNING next_event_index", [count, session_id, *values])
        row = cursor.fetchone()
    if row is None:
        raise _not_written(session_id, fence)
    return int(row[0]) - count


def _insert_portable(session_id: str, rows: list[Event], fence: Fence | None) -> None:
    """Reserve the indexes, then insert: two statements in one transaction (SQLite)."""
    # Inside a caller's transaction, that transaction is the unit: a savepoint would cost
    # two more round trips. (An unknown session raises before anything is written.)
    with contextlib.nullcontext() if connection.in_atomic_block else transaction.atomic():
        first = _reserve_indexes(session_id, len(rows), fence)
        for offset, row in enumerate(rows):
            row.index = first + offset
        Event.objects.bulk_create(rows)


# One statement, so one round trip and, outside a caller's transaction, its own
# transaction: reserving the indexes (the UPDATE takes the session row's lock until
# the commit) and inserting the events with them. No session, no row to insert from.
_INSERT_POSTGRES = """
WITH reserved AS (
    UPDATE {sessions} SET next_event_index = next_event_index + %(count)s
    WHERE id = %(session)s{fence} RETURNING next_event_index - %(count)s AS first
)
INSERT INTO {events} (session_id, "index", type, turn_id, at, data)
SELECT %(session)s, reserved.first + new.ord - 1, new.row->>'type', new.row->>'turn', %(at)s, new.row->'data'
FROM reserved, jsonb_array_elements(%(rows)s::jsonb) WITH ORDINALITY AS new(row, ord)
RETURNING id, "index"
"""


# An append fenced to one attempt at a turn (see ``Fence``) reserves only while the turn
# is running under that attempt: the same single statement.
_FENCE_POSTGRES = (
    " AND EXISTS (SELECT 1 FROM {turns} WHERE id = %(fence_turn)s AND attempts = %(fence_attempt)s"
    " AND status = %(fence_status)s)"
)


@functools.cache
def _append_sql(fenced: bool) -> str:
    """The append statement, unfenced or fenced (built once each: every event goes through it)."""
    fence_sql = _FENCE_POSTGRES.format(turns=Turn._meta.db_table) if fenced else ""
    return _INSERT_POSTGRES.format(sessions=Session._meta.db_table, events=Event._meta.db_table, fence=fence_sql)


def _insert_postgres(session_id: str, rows: list[Event], fence: Fence | None) -> None:
    sql = _append_sql(fence is not None)
    params: dict[str, Any] = {
        "count": len(rows),
        "session": session_id,
        "at": rows[0].at,
        # One JSON text, not three arrays: psycopg would inspect every list to pick its dumper.
        "rows": json.dumps([{"type": row.type, "turn": row.turn_id, "data": row.data} for row in rows]),
    }
    if fence is not None:
        params.update(fence_turn=fence.turn_id, fence_attempt=fence.attempt, fence_status=TurnStatus.RUNNING)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        written = sorted(cursor.fetchall(), key=lambda written_row: written_row[1])
    if not written:
        raise _not_written(session_id, fence)
    for row, (pk, index) in zip(rows, written, strict=True):
        row.pk, row.index = pk, index
        row._state.adding, row._state.db = False, connection.alias


def append_events(session_id: str, events: Sequence[NewEvent], fence: Fence | None = None) -> list[Event]:
    """Durably append ``events`` to the session's log, in order, with consecutive indexes;
    with a ``fence``, only while that attempt at the turn is the current one.

    Example::

        [event] = append_events(session.id, [NewEvent(EventType.MESSAGE_RECEIVED, {"text": "hi"})])
        event.index  # 0 for a new session

    Raises:
        UnknownSession: when no session has this id; nothing is written.
        StaleAttempt: the ``fence``'s attempt is not the turn's current one; nothing is written.
        ValueError: for an event type outside the vocabulary.
    """
    if not events:
        return []
    for new in events:
        EventType(new.type)  # ValueError on a name outside DESIGN.md §5
    now = timezone.now()
    rows = [
        Event(session_id=session_id, type=new.type, turn_id=new.turn_id, at=now, data=dict(new.data)) for new in events
    ]
    if connection.vendor == "postgresql":
        _insert_postgres(session_id, rows, fence)
    else:
        _insert_portable(session_id, rows, fence)
    # Both run after the commit (at once when the insert was its own transaction).
    _ring_after_commit(session_id, rows[-1].index)
    request_dispatch(session_id, {new.type for new in events})  # hooks and channel handlers
    return rows


class _Ring:
    """The doorbell ring a transaction owes one session when it commits."""

    __slots__ = ("index", "session_id")

    def __init__(self, session_id: str, index: int) -> None:
        self.session_id, self.index = session_id, index

    def __call__(self) -> None:
        doorbell.ring(self.session_id, self.index)


def _ring_after_commit(session_id: str, index: int) -> None:
    """Ring the session's doorbell once the append commits: once per transaction, with
    its last index, however many appends the transaction makes (every ring makes every
    stream of the session read the table).

    A later append joins the ring of an earlier one only in the same savepoint: rolling
    that savepoint back drops both appends and the ring with them, so a ring never
    announces an index that was rolled back (a stream would look for it until it came).
    """
    if connection.in_atomic_block:
        scope = set(connection.savepoint_ids)
        # ``run_on_commit`` holds (savepoint ids, callback, robust) per callback, as
        # ``on_commit`` records them (the stubs know only the first two).
        for entry in reversed(connection.run_on_commit):
            saved_scope, callback = entry[0], entry[1]
            if isinstance(callback, _Ring) and callback.session_id == session_id and saved_scope == scope:
                callback.index = max(callback.index, index)
                return
    transaction.on_commit(_Ring(session_id, index))


def append_event(
    session_id: str, type: EventType, data: Mapping[str, Any] | None = None, turn_id: str | None = None
) -> Event:
    """Append one event; see ``append_events``."""
    [event] = append_events(session_id, [NewEvent(type, data or {}, turn_id)])
    return event


def read_events(session_id: str, start_index: int = 0, limit: int | None = None) -> list[Event]:
    """The session's events from ``start_index`` on, in index order.

    Every stream reads the log through here, several times a turn, so on Postgres the
    query is written out (``agent_platform.rows``; the ORM would take ten times longer
    to build it than to run it).
    """
    if connection.vendor != "postgresql":
        query = Event.objects.filter(session_id=session_id, index__gte=start_index).order_by("index")
        return list(query[:limit] if limit is not None else query)
    with connection.cursor() as cursor:
        # LIMIT NULL is no limit.
        cursor.execute(_read_events_sql(), [session_id, start_index, limit])
        return [instance(Event, row) for row in cursor.fetchall()]


# Clocks of the web and worker hosts may disagree by this much: a turn's events are looked
# for from the last event older than its creation minus this.
CLOCK_SKEW = timedelta(seconds=60)


def events_of_turn(session_id: str, turn_id: str, created_at: datetime) -> QuerySet[Event]:
    """The events of one turn, read from where the turn began, not from the session's
    start: a turn of a session with a long history costs what it costs in a new one.

    Every event of a turn is appended after the turn was made, so the search starts at
    the last event older than that (minus ``CLOCK_SKEW``), found by walking the session's
    index back from its end (one query, as far back as the turn goes).
    """
    floor = (
        Event.objects.filter(session_id=session_id, at__lt=created_at - CLOCK_SKEW)
        .order_by("-index")
        .values_list("index", flat=True)
        .first()
    )
    return Event.objects.filter(session_id=session_id, index__gte=floor or 0, turn_id=turn_id).order_by("index")


def ended_before(session_id: str, index: int) -> bool:
    """Whether the session's log ended (``session.completed`` or ``session.failed``)
    before ``index``: a stream from there has nothing to wait for.

    Answered from the small partial index ``event_session_end``; on Postgres the types
    are written into the query, since a parameter would keep a prepared statement's
    plan from using that index.
    """
    if connection.vendor != "postgresql":
        ended = Event.objects.filter(session_id=session_id, index__lt=index, type__in=TERMINAL_SESSION_EVENTS)
        return ended.exists()
    with connection.cursor() as cursor:
        cursor.execute(_ended_before_sql(), [session_id, index])
        return cursor.fetchone() is not None


@functools.cache
def _ended_before_sql() -> str:
    # The table is the model's, the types are the vocabulary's constants; the values are parameters.
    ends = ", ".join(f"'{end}'" for end in sorted(TERMINAL_SESSION_EVENTS))
    return (
        f"SELECT 1 FROM {Event._meta.db_table} "  # noqa: S608
        f'WHERE session_id = %s AND "index" < %s AND type IN ({ends}) LIMIT 1'
    )


@functools.cache
def _read_events_sql() -> str:
    # The table and column names are the model's own; the values are parameters.
    return (
        f"SELECT {columns(Event, 'e')} FROM {Event._meta.db_table} e "  # noqa: S608
        'WHERE e.session_id = %s AND e."index" >= %s ORDER BY e."index" LIMIT %s'
    )
