"""A/B through live turns on a real worker (another process than the one that made the
assignment, reading the same database): the arm is sticky across follow-ups and
processes (``ctx.session.abs`` in the worker equals ``ab.assigned``), the arm's
instructions join every turn's prompt (the test model counts prompt words as input
tokens), ``metrics(sample)`` lands in ``/v1/abs`` after each settled turn, and a metrics
function that raises is logged and skipped without touching the session."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from agent_platform.tests.daphne import serve
from agent_platform.tests.factories import issue_token
from sessions_app.tests.live import types

pytestmark = pytest.mark.django_db(transaction=True)

# Words each arm's instructions add to the system prompt (splits/agent/ab/tone.py).
ARM_WORDS = {"plain": 0, "fancy": 6, "terse": 2}


def _wait_for_sample(client, session_id: str, turns: int) -> dict:
    deadline = time.monotonic() + 15
    while True:
        body = client.client.get("/splits/v1/abs").json()
        row = next(r for r in body["sessions"] if r["sessionId"] == session_id)
        if row["metrics"].get("turns") == turns:
            return body
        assert time.monotonic() < deadline, row
        time.sleep(0.05)


def _arms_from_a_fresh_server(tmp_path_factory, agents_dir, token: str, session_id: str) -> dict:
    """A server process started now (a restart, as far as the session can tell) runs the
    ``arms`` tool bound to the session."""
    env = {"AGENTS_DIR": str(agents_dir), "PLATFORM_DEV": "0", "ALLOWED_HOSTS": "127.0.0.1"}
    servers = serve(tmp_path_factory, env, "/splits/v1/health")
    server = next(servers)
    try:
        request = urllib.request.Request(
            f"{server.url}/splits/v1/tools/arms",
            data=json.dumps({"input": {}, "sessionId": session_id}).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())["result"]
    finally:
        next(servers, None)  # stops it


def test_an_arm_sticks_joins_every_prompt_and_its_metrics_are_reported(live, alice, tmp_path_factory, live_agents_dir):
    client = live(alice, "splits")
    first = client.start("/call arms {}")
    session_id = first["sessionId"]
    events = client.wait_for(session_id, "turn.completed")
    assigned = events[1]
    assert assigned["type"] == "ab.assigned" and assigned["data"]["experiment"] == "tone"
    arm = assigned["data"]["arm"]
    result = next(e for e in events if e["type"] == "action.result")
    assert result["data"]["output"] == {"tone": arm}  # read by the worker process

    assert client.follow_up(session_id, "/call arms {}").status_code == 202
    events = client.wait_for(session_id, "turn.completed", count=2)
    results = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert results == [{"tone": arm}, {"tone": arm}]
    assert types(events).count("ab.assigned") == 1
    assert _arms_from_a_fresh_server(tmp_path_factory, live_agents_dir, issue_token(alice), session_id) == {"tone": arm}
    body = _wait_for_sample(client, session_id, turns=2)
    row = next(r for r in body["sessions"] if r["sessionId"] == session_id)
    assert row == {**row, "experiment": "tone", "arm": arm, "metrics": {"turns": 2.0, "toolCalls": 2.0}}
    arm_report = next(a for a in body["experiments"][0]["arms"] if a["arm"] == arm)
    assert arm_report["metrics"]["turns"]["n"] == 1 and arm_report["metrics"]["turns"]["mean"] == 2.0
    assert arm_report["metrics"]["turns"]["ci95"] is None  # one session is no interval

    # Same message, sessions in two arms: the input tokens differ by the arms' words.
    seen = {}
    for _ in range(12):
        other = client.start("hello")["sessionId"]
        done = client.wait_for(other, "turn.completed")
        completed = next(e for e in done if e["type"] == "turn.completed")
        seen.setdefault(done[1]["data"]["arm"], completed["data"]["usage"]["inputTokens"])
        if len(seen) >= 2:
            break
    assert len(seen) >= 2, seen
    (a, tokens_a), (b, tokens_b) = list(seen.items())[:2]
    assert tokens_a - tokens_b == ARM_WORDS[a] - ARM_WORDS[b], seen

    # metrics raises for a session with a failed turn: logged on /v1/logs, sample skipped.
    failing = client.start("/fail boom")["sessionId"]
    client.wait_for(failing, "turn.failed")
    deadline = time.monotonic() + 15
    while True:
        lines = client.client.get("/splits/v1/logs").json()["lines"]
        logged = [
            line for line in lines if line["sessionId"] == failing and "metrics(sample) failed" in line["message"]
        ]
        if logged:
            break
        assert time.monotonic() < deadline, lines
        time.sleep(0.05)
    row = next(r for r in client.client.get("/splits/v1/abs").json()["sessions"] if r["sessionId"] == failing)
    assert row["metrics"] == {}
    assert client.follow_up(failing, "still here").status_code == 202
    client.wait_for(failing, "turn.completed")
