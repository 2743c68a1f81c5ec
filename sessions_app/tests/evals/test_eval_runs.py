"""Eval runs through ``/<slug>/v1/dev/evals`` with a real Celery worker: statuses,
filters, 404 / 409, cancel, and ``max_concurrency`` (the judge agent's evals)."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = "/judge/v1/dev/evals"


def wait_done(client: Any, run_id: str, timeout: float = 40.0, watch: Any = None, root: str = ROOT) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        snapshot = client.get(f"{root}/runs/{run_id}").json()
        if watch is not None:
            watch()
        if snapshot["status"] != "running":
            return snapshot
        assert time.monotonic() < deadline, snapshot
        time.sleep(0.1)


def test_a_run_gives_each_case_its_status(live, alice, mallory, client_for):
    client = live(alice, "judge").client
    listed = client.get(ROOT).json()
    assert {"id": "ok/echo", "description": "echoes twice on one session", "tags": ["smoke"]} in listed["datapoints"]
    assert listed["config"]["maxConcurrency"] == 2

    started = client.post(f"{ROOT}/runs", {"tags": ["smoke", "bad", "tools"]}, format="json")
    assert started.status_code == 202, started.content
    assert started.json()["status"] == "running" and started.json()["summary"]["total"] == 8
    again = client.post(f"{ROOT}/runs", {}, format="json")
    assert again.status_code == 409 and again.json()["error"] == "eval_run_running"

    snapshot = wait_done(client, started.json()["runId"])
    assert snapshot["status"] == "completed" and snapshot["finishedAt"]
    statuses = {case["id"]: case["status"] for case in snapshot["cases"]}
    assert statuses == {
        "bad/boom": "error",
        "bad/flaky": "flaky",
        "bad/slow": "timeout",
        "bad/wrong": "failed",
        "ok/commit": "passed",  # commit ran on the worker with purpose eval (the case checks its error)
        "ok/echo": "passed",
        "ok/tool": "passed",
        "ok/unknown_tool": "passed",
    }
    summary = snapshot["summary"]
    assert (summary["passed"], summary["failed"], summary["error"], summary["timeout"], summary["flaky"]) == (
        4,
        1,
        1,
        1,
        1,
    )
    cases = {case["id"]: case for case in snapshot["cases"]}
    assert "the case itself broke" in cases["bad/boom"]["error"]
    assert cases["bad/flaky"]["attempts"] == 2 and len(cases["bad/flaky"]["sessionIds"]) == 2
    assert [a["ok"] for a in cases["bad/wrong"]["assertions"]] == [False, False]
    assert all(a["ok"] for a in cases["ok/tool"]["assertions"])

    # The case's session is a real eval session of the caller, listed only with ?purpose=eval.
    echo_session = cases["ok/echo"]["sessionIds"][0]
    assert echo_session not in {s["sessionId"] for s in client.get("/judge/v1/sessions").json()["sessions"]}
    evals = {s["sessionId"]: s for s in client.get("/judge/v1/sessions?purpose=eval").json()["sessions"]}
    assert echo_session in evals
    kinds = [e["type"] for e in client.get(f"/judge/v1/session/{echo_session}/events").json()["events"]]
    assert kinds.count("turn.completed") == 2
    # Hooks fire for eval sessions, with the purpose eval (the judge's hook logs it).
    logged = client.get("/judge/v1/logs").json()["lines"]
    assert any(
        line["sessionId"] == echo_session and "turn.completed in a eval session" in line["message"] for line in logged
    ), logged

    # Runs are tenant-scoped: another tenant sees neither the run nor its list.
    other = client_for(mallory)
    assert other.get(f"{ROOT}/runs/{snapshot['runId']}").status_code == 404
    assert other.get(f"{ROOT}/runs").json() == {"runs": []}
    assert client.get(f"{ROOT}/runs").json()["runs"][0]["runId"] == snapshot["runId"]
    assert client.post(f"{ROOT}/runs/{snapshot['runId']}/cancel").status_code == 409


def test_filters_404_and_bad_bodies(live, alice):
    client = live(alice, "judge").client
    for body in ({"filterIds": ["nope"]}, {"tags": ["nope"]}, {"filterIds": ["ok/echo"], "tags": ["bad"]}):
        answer = client.post(f"{ROOT}/runs", body, format="json")
        assert answer.status_code == 404, (body, answer.content)
    for body in ({"tags": "smoke"}, {"filterIds": [1]}, [1]):
        answer = client.post(f"{ROOT}/runs", body, format="json")
        assert answer.status_code == 400, (body, answer.content)
    assert client.get(f"{ROOT}/runs").json() == {"runs": []}
    # OR within a list, AND between them.
    answer = client.post(
        f"{ROOT}/runs", {"filterIds": ["ok/echo", "ok/tool", "bad/boom"], "tags": ["tools", "bad"]}, format="json"
    )
    assert answer.status_code == 202
    assert [case["id"] for case in answer.json()["cases"]] == ["bad/boom", "ok/tool"]
    assert answer.json()["filterIds"] == ["ok/echo", "ok/tool", "bad/boom"]
    wait_done(client, answer.json()["runId"])
    assert client.get(f"{ROOT}/runs/evr_unknown").status_code == 404
    assert client.post(f"{ROOT}/runs/evr_unknown/cancel").status_code == 404


def test_cancel_stops_the_running_turns(live, alice):
    client = live(alice, "judge").client
    run = client.post(f"{ROOT}/runs", {"tags": ["hang"]}, format="json").json()
    deadline = time.monotonic() + 20
    while not client.get("/judge/v1/sessions?purpose=eval").json()["sessions"]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    cancelled = client.post(f"{ROOT}/runs/{run['runId']}/cancel")
    assert cancelled.status_code == 200
    body = cancelled.json()
    assert body["status"] == "cancelled" and [c["status"] for c in body["cases"]] == ["cancelled"]
    assert body["summary"]["cancelled"] == 1
    session_id = client.get("/judge/v1/sessions?purpose=eval").json()["sessions"][0]["sessionId"]
    deadline = time.monotonic() + 15
    events = f"/judge/v1/session/{session_id}/events"
    while "turn.failed" not in [e["type"] for e in client.get(events).json()["events"]]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert client.post(f"{ROOT}/runs/{run['runId']}/cancel").status_code == 409
    # A cancelled run is no longer running: a new one may start.
    assert client.get(f"{ROOT}/runs/{run['runId']}").json()["status"] == "cancelled"


def test_max_concurrency_is_never_exceeded(live, alice):
    client = live(alice, "judge").client
    run = client.post(f"{ROOT}/runs", {"tags": ["parallel"]}, format="json").json()
    seen: list[int] = []

    def count() -> None:
        # Running: its turn has begun and has not ended in the log (a session row may still
        # say running for a moment after its turn's end is logged and the next case began).
        sessions = client.get("/judge/v1/sessions?purpose=eval").json()["sessions"]
        running = 0
        for listed in (s for s in sessions if s["status"] == "running"):
            events = client.get(f"/judge/v1/session/{listed['sessionId']}/events").json()["events"]
            running += not any(e["type"] in ("turn.completed", "turn.failed") for e in events)
        seen.append(running)

    snapshot = wait_done(client, run["runId"], watch=count)
    assert snapshot["summary"]["passed"] == 4
    assert max(seen) <= 2
    assert max(seen) == 2  # the limit is used, not just respected


def test_the_config_model_runs_eval_sessions_of_an_agent_that_names_none(live, alice):
    # Both configs name "nowhere:eval-model"; ownmodel's agent names "test" itself.
    client = live(alice).client
    expected = {"pickmodel": "nowhere:eval-model", "ownmodel": "test"}
    runs = {slug: client.post(f"/{slug}/v1/dev/evals/runs", {}, format="json").json()["runId"] for slug in expected}
    for slug, run_id in runs.items():
        snapshot = wait_done(client, run_id, root=f"/{slug}/v1/dev/evals")
        # pickmodel's case checks its turn failed naming the config's model (it ran on it).
        assert snapshot["summary"]["passed"] == 1, snapshot["cases"]
        session_id = snapshot["cases"][0]["sessionIds"][0]
        events = client.get(f"/{slug}/v1/session/{session_id}/events").json()["events"]
        assert next(e for e in events if e["type"] == "agent.bound")["data"]["model"] == expected[slug]
