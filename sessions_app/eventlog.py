"""The session event log: the one way events are written.

Indexes are allocated from ``Session.next_event_index`` in the same transaction
as the insert. The ``UPDATE ... RETURNING`` takes the session row's lock, so
concurrent appenders to one session queue behind each other, and a rolled-back
append rolls its counter back too: indexes stay gapless and unique whatever runs
concurrently. The ``(session, index)`` unique constraint is the backstop.

After the transaction commits, the session's doorbell rings
(``sessions_app.doorbell.ring``): a small "appended up to N" signal with no event in
it. Stream readers always read the events themselves from the table, so a lost
signal delays, never loses.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from sessions_app import doorbell
from sessions_app.dispatch import request_dispatch
from sessions_app.events import EventType
from sessions_app.models import Event, Session


class UnknownSession(LookupError):
    """Appending to a session that does not exist."""


@dataclass(frozen=True)
class NewEvent:
    """An event to append; the log gives it its index and time."""

    type: EventType
    data: Mapping[str, Any] = field(default_factory=dict)
    turn_id: str | None = None


def _reserve_indexes(session_id: str, count: int) -> int:
    """Advance the session's counter by ``count``; returns the first reserved index.

    Raises:
        UnknownSession: when no session has this id.
    """
    table = Session._meta.db_table
    with connection.cursor() as cursor:
        # The table name is ours; the values are parameters.
        cursor.execute(
            f"UPDATE {table} SET next_event_index = next_event_index + %s WHERE id = %s RETURNING next_event_index",  # noqa: S608
            [count, session_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise UnknownSession(session_id)
    return int(row[0]) - count


def _insert_portable(session_id: str, rows: list[Event]) -> None:
    """Reserve the indexes, then insert: two statements in one transaction (SQLite)."""
    # Inside a caller's transaction, that transaction is the unit: a savepoint would cost
    # two more round trips. (An unknown session raises before anything is written.)
    with contextlib.nullcontext() if connection.in_atomic_block else transaction.atomic():
        first = _reserve_indexes(session_id, len(rows))
        for offset, row in enumerate(rows):
            row.index = first + offset
        Event.objects.bulk_create(rows)


# One statement, so one round trip and, outside a caller's transaction, its own
# transaction: reserving the indexes (the UPDATE takes the session row's lock until
# the commit) and inserting the events with them. No session, no row to insert from.
_INSERT_POSTGRES = """
WITH reserved AS (
    UPDATE {sessions} SET next_event_index = next_event_index + %(count)s
    WHERE id = %(session)s RETURNING next_event_index - %(count)s AS first
)
INSERT INTO {events} (session_id, "index", type, turn_id, at, data)
SELECT %(session)s, reserved.first + new.ord - 1, new.type, new.turn_id, %(at)s, new.data
FROM reserved, unnest(%(types)s::varchar[], %(turns)s::varchar[], %(data)s::jsonb[]) WITH ORDINALITY
    AS new(type, turn_id, data, ord)
RETURNING id, "index"
"""


def _insert_postgres(session_id: str, rows: list[Event]) -> None:
    sql = _INSERT_POSTGRES.format(sessions=Session._meta.db_table, events=Event._meta.db_table)
    params: dict[str, Any] = {
        "count": len(rows),
        "session": session_id,
        "at": rows[0].at,
        "types": [row.type for row in rows],
        "turns": [row.turn_id for row in rows],
        "data": [json.dumps(row.data) for row in rows],
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        written = sorted(cursor.fetchall(), key=lambda written_row: written_row[1])
    if not written:
        raise UnknownSession(session_id)
    for row, (pk, index) in zip(rows, written, strict=True):
        row.pk, row.index = pk, index
        row._state.adding, row._state.db = False, connection.alias


def append_events(session_id: str, events: Sequence[NewEvent]) -> list[Event]:
    """Durably append ``events`` to the session's log, in order, with consecutive indexes.

    Example::

        [event] = append_events(session.id, [NewEvent(EventType.MESSAGE_RECEIVED, {"text": "hi"})])
        event.index  # 0 for a new session

    Raises:
        UnknownSession: when no session has this id; nothing is written.
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
        _insert_postgres(session_id, rows)
    else:
        _insert_portable(session_id, rows)
    # Both run after the commit (at once when the insert was its own transaction).
    transaction.on_commit(partial(doorbell.ring, session_id, rows[-1].index))
    request_dispatch(session_id, {new.type for new in events})  # hooks and channel handlers
    return rows


def append_event(
    session_id: str, type: EventType, data: Mapping[str, Any] | None = None, turn_id: str | None = None
) -> Event:
    """Append one event; see ``append_events``."""
    [event] = append_events(session_id, [NewEvent(type, data or {}, turn_id)])
    return event


def read_events(session_id: str, start_index: int = 0, limit: int | None = None) -> list[Event]:
    """The session's events from ``start_index`` on, in index order."""
    query = Event.objects.filter(session_id=session_id, index__gte=start_index).order_by("index")
    return list(query[:limit] if limit is not None else query)
