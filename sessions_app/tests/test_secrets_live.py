"""Secrets in real turns on a worker: one set after a session started is what the next
call's ``ctx.secrets`` holds, and a distinctive value, once used by tools that succeed,
fail and misbehave, appears nowhere the platform writes: no event, log line (stored,
served or captured), error body or admin page."""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid

from django.contrib.admin.models import LogEntry

from agent_platform.tests.factories import PrincipalFactory, TenantFactory, admin_url, staff_user_for
from agents.models import AgentSecret
from sessions_app.dispatch import dispatch_pending
from sessions_app.models import Event, LogLine

CANARY = "sk-LEAK-CANARY-" + uuid.uuid4().hex


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def results(events: list[dict], tool: str) -> list[dict]:
    return [e["data"] for e in events if e["type"] == "action.result" and e["data"]["toolName"] == tool]


def test_a_secret_set_after_start_is_used_at_the_next_call_and_the_platform_never_writes_it(
    live, alice, client_for, admin_client, caplog
):
    caplog.set_level(logging.DEBUG)
    ops = PrincipalFactory(tenant=TenantFactory(slug="local"), name="ops")  # the shared agents' secrets
    staff_user_for(ops)
    operator, vault = client_for(ops), live(alice, "vault")
    bodies: list[bytes] = []

    started = vault.start("/call peek {}")
    events = vault.wait_for(started["sessionId"], "turn.completed")
    assert results(events, "peek")[0]["output"]["set"] is False

    answer = operator.put("/api/v1/agents/vault/secrets/VAULT_TOKEN", {"value": CANARY}, format="json")
    assert answer.status_code == 200
    bodies.append(answer.content)
    assert vault.follow_up(started["sessionId"], "/call peek {}").status_code == 202
    events = vault.wait_for(started["sessionId"], "turn.completed", count=2)
    assert results(events, "peek")[1]["output"] == {"names": ["VAULT_TOKEN"], "set": True, "digest": digest(CANARY)}

    # Tools that use the value and fail, or try to change ctx.secrets; a failing direct call.
    assert vault.follow_up(started["sessionId"], "/call explode {}\n/call tamper {}").status_code == 202
    events = vault.wait_for(started["sessionId"], "turn.completed", count=3)
    exploded = results(events, "explode")[0]
    assert exploded["isError"] is True and "the vault refused the token" in json.dumps(exploded)
    assert results(events, "tamper")[0]["output"] == {"write": "refused", "undeclared": False}
    direct = vault.client.post("/vault/v1/tools/explode", {"input": {}}, format="json")
    assert direct.status_code == 200 and direct.json()["isError"] is True
    bodies += [direct.content, vault.client.get("/vault/v1/logs").content]
    # Refused writes that carry the value.
    for name, body in [("bad-name", {"value": CANARY}), ("VAULT_TOKEN", {"value": CANARY * 2000})]:
        refused = operator.put(f"/api/v1/agents/vault/secrets/{name}", body, format="json")
        assert refused.status_code == 400
        bodies.append(refused.content)
    bodies.append(operator.get("/api/v1/agents/vault/secrets").content)
    row = AgentSecret.objects.get(name="VAULT_TOKEN")
    for page in ("/admin/agents/agentsecret/", admin_url(row, "change"), admin_url(row, "history")):
        shown = admin_client.get(page)
        assert shown.status_code == 200
        bodies.append(shown.content)

    logged = LogLine.objects.filter(message__contains="refused a token")
    assert logged.exists()  # the tool's own log line arrived, so the scan below reads real logs
    # The hook of a completed turn after the secret was set saw it (names only are logged).
    deadline = time.monotonic() + 15
    while not LogLine.objects.filter(message="hook sees VAULT_TOKEN").exists() and time.monotonic() < deadline:
        dispatch_pending(started["sessionId"])  # now, rather than at the worker's coalesced dispatch
        time.sleep(0.05)
    assert LogLine.objects.filter(message="hook sees VAULT_TOKEN").exists()
    written = {
        "events": json.dumps(list(Event.objects.values_list("type", "data"))),
        "stored log lines": json.dumps(list(LogLine.objects.values_list("logger", "message"))),
        "captured logs": caplog.text,
        "answers": b"\n".join(bodies).decode(errors="replace"),
        "admin history": json.dumps(list(LogEntry.objects.values_list("object_repr", "change_message"))),
        "the row": f"{row!r} {row} {row.ciphertext}",
    }
    assert [where for where, text in written.items() if CANARY in text] == []
