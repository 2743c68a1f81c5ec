"""What the faults agent's tools leave behind (its side-effect ledger) and wait for (gates).

The ``effect`` tool writes ``ledger/run/<callId>/<uuid>`` (with its PID) each time a
run starts and ``ledger/effect/<callId>`` when its effect is made (once per call id,
its idempotency key), in the agent's key-value store; with ``gate``, it waits for
the key ``gate/<name>``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sessions_app.models import KVEntry, Session


def ledger(cursor: Any = None) -> dict[str, Counter[str]]:
    """``{"run": Counter(call_id), "effect": Counter(call_id)}`` from the fake tools' ledger."""
    if cursor is None:
        from django.db import connection

        with connection.cursor() as django_cursor:
            return ledger(django_cursor)
    found: dict[str, Counter[str]] = {"run": Counter(), "effect": Counter()}
    cursor.execute(f"SELECT key FROM {KVEntry._meta.db_table} WHERE key LIKE %s", ["ledger/%"])  # noqa: S608
    for (key,) in cursor.fetchall():
        _, kind, call_id, *_ = key.split("/")
        if kind in found:
            found[kind][call_id] += 1
    return found


def run_times(cursor: Any) -> dict[str, list[Any]]:
    """``{call id: [when each run started]}`` from the ledger."""
    cursor.execute(
        f"SELECT key, updated_at FROM {KVEntry._meta.db_table} WHERE key LIKE %s",  # noqa: S608
        ["ledger/run/%"],
    )
    starts: dict[str, list[Any]] = {}
    for key, at in cursor.fetchall():
        starts.setdefault(key.split("/")[2], []).append(at)
    return starts


def open_gate(session_id: str, name: str) -> None:
    """Let the session's effect calls that wait on gate ``name`` go on."""
    session = Session.objects.get(pk=session_id)
    KVEntry.objects.create(tenant_id=session.tenant_id, agent_id=session.agent_id, key=f"gate/{name}", value=True)


def running_pid(key: str) -> int | None:
    """The PID of the process that started the effect call for ``key``, once it has."""
    for value in KVEntry.objects.filter(key__startswith="ledger/run/").values_list("value", flat=True):
        if value.get("key") == key:
            return int(value["pid"])
    return None


def call_ids(events: list[dict[str, Any]]) -> dict[str, str]:
    """``{effect key: call id}`` of the calls requested in ``events``."""
    return {
        call["args"]["key"]: call["callId"]
        for event in events
        if event["type"] == "actions.requested"
        for call in event["data"]["calls"]
        if isinstance(call.get("args"), dict) and "key" in call["args"]
    }


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]
