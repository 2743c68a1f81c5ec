"""The log invariants every fault test ends with (RELIABILITY.md §1, Harness).

``assert_log_invariants`` reads the tables with plain SQL through any DB-API
cursor (the test database's, or a throwaway server's), so the same check runs
after every fault, whichever Postgres the platform was using.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from typing import Any

from sessions_app.models import Event, Session, Turn
from sessions_app.tests.faults.tools import ledger, run_times

TERMINAL = ("turn.completed", "turn.failed")
IDS = re.compile(r"\b(?:ses|turn|call)_[0-9a-z]+\b")


def _rows(cursor: Any, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    cursor.execute(sql, params)
    return list(cursor.fetchall())


def assert_log_invariants(session_ids: list[str] | None = None, cursor: Any = None) -> dict[str, Any]:
    """Check what the platform promises of its log, for ``session_ids`` (default: all):

    - per session, indexes are exactly 0..n-1 (no gap, no duplicate);
    - every turn has at most one ``turn.started`` and exactly one terminal event, and
      its row says completed or failed (no turn is left running, queued or parked);
    - every ``action.result`` answers a requested call, at most once per call id;
    - the side-effect ledger holds at most one effect per call id, and no call ran
      again once its result was logged;
    - no event carries an id of another tenant's session, turn or call.

    Returns what it read (events per session), for further assertions.
    """
    if cursor is None:
        from django.db import connection

        with connection.cursor() as django_cursor:
            return assert_log_invariants(session_ids, django_cursor)
    sessions_table, events_table = Session._meta.db_table, Event._meta.db_table
    turns_table = Turn._meta.db_table
    tenants = dict(_rows(cursor, f"SELECT id, tenant_id FROM {sessions_table}", []))  # noqa: S608
    wanted = sorted(tenants if session_ids is None else session_ids)
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    result_at: dict[str, Any] = {}
    for session_id, index, type, turn_id, data, at in _rows(
        cursor,
        f"SELECT session_id, index, type, turn_id, data, at FROM {events_table} "  # noqa: S608
        "WHERE session_id = ANY(%s) ORDER BY session_id, index",
        [wanted],
    ):
        data = json.loads(data) if isinstance(data, str) else data
        events[session_id].append({"index": index, "type": type, "turnId": turn_id, "data": data})
        if type == "action.result":
            result_at[data["callId"]] = at
    turns = _rows(
        cursor,
        f"SELECT id, session_id, status, attempts FROM {turns_table} WHERE session_id = ANY(%s)",  # noqa: S608
        [wanted],
    )
    owner_of: dict[str, int] = {session_id: tenant for session_id, tenant in tenants.items()}
    for turn_id, session_id, _, _ in turns:
        owner_of[turn_id] = tenants[session_id]

    for session_id in wanted:
        log = events[session_id]
        assert [e["index"] for e in log] == list(range(len(log))), f"{session_id}: indexes not 0..n-1"
        requested: set[str] = set()
        results: Counter[str] = Counter()
        for event in log:
            data = event["data"]
            if event["type"] == "actions.requested":
                for call in data["calls"]:
                    owner_of[call["callId"]] = tenants[session_id]
                    requested.add(call["callId"])
            elif event["type"] == "action.result":
                results[data["callId"]] += 1
            if event["turnId"] is not None:
                assert owner_of.get(event["turnId"]) == tenants[session_id], f"{session_id}: foreign turn {event}"
        assert set(results) <= requested, f"{session_id}: results for calls never requested"
        assert all(n == 1 for n in results.values()), f"{session_id}: a call has more than one result: {results}"
        for turn_id, turn_session, status, _ in turns:
            if turn_session != session_id:
                continue
            of_turn = [e["type"] for e in log if e["turnId"] == turn_id]
            assert of_turn.count("turn.started") <= 1, f"{turn_id}: turn.started twice: {of_turn}"
            ends = [t for t in of_turn if t in TERMINAL]
            assert len(ends) == 1, f"{turn_id} ({status}): terminal events {ends}: {of_turn}"
            assert status == ends[0].removeprefix("turn."), f"{turn_id}: row says {status}, log says {ends[0]}"
    # Ids in event data: each must belong to the event's own tenant.
    for session_id in wanted:
        for event in events[session_id]:
            for found in IDS.findall(json.dumps(event["data"])):
                owner = owner_of.get(found)
                assert owner in (None, tenants[session_id]), f"{session_id}#{event['index']} names {found}"

    # The ledger of the faults agent's tools: an effect at most once per call id, and no
    # run of a call that started after its result was in the log (it was run again).
    doubled = {call: n for call, n in ledger(cursor)["effect"].items() if n > 1}
    assert not doubled, f"external effects made more than once: {doubled}"
    for call_id, starts in run_times(cursor).items():
        logged_at = result_at.get(call_id)
        assert logged_at is None or max(starts) < logged_at, f"{call_id} ran again after its result was logged"
    return dict(events)
