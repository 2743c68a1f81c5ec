"""The attack of issue 17, replayed: a tenant deploys a tree whose tool tries to read the
platform's credentials, code and data and to reach its services; driven through a real
turn over HTTP on the live worker (which holds DATABASE_URL), every attempt fails inside
the runner, and the platform keeps serving."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agents.tests.sandbox.trees import ATTACKER, MISBEHAVING
from sessions_app.models import KVEntry

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[3]


def _result(client, session_id: str) -> dict:
    events = client.wait_for(session_id, "turn.completed")
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    return result


def test_every_attempt_of_a_hostile_tool_fails_inside_the_runner(live, alice, deployed, celery_worker_process):
    weather = live(alice, "weather")
    other = weather.start("hello", workspaceFiles={"private.md": "another session's notes"})["sessionId"]
    weather.wait_for(other, "turn.completed")
    var = celery_worker_process.var_dir
    other_workspace = var / "workspaces" / other
    assert (other_workspace / "private.md").is_file()
    attacker = live(alice, deployed(alice, ATTACKER))
    arguments = {
        "paths": [
            str(REPO / "agent_platform" / "settings.py"),
            str(REPO / ".env"),
            str(other_workspace / "private.md"),
        ],
        "folders": [str(other_workspace), str(REPO / "sessions_app"), str(REPO / "var")],
    }
    session = attacker.start(f"/call attack {json.dumps(arguments)}")["sessionId"]
    result = _result(attacker, session)
    assert result["isError"] is False, result
    seen = result["output"]
    assert seen["environ"] == {}
    assert seen["proc1"] == "read 0 bytes" and seen["proc1_environ"] == ""
    assert seen["uid"] == 65534
    assert all(outcome.startswith("refused") for outcome in seen["paths"].values()), seen["paths"]
    assert all(outcome == "refused: FileNotFoundError" for outcome in seen["folders"].values()), seen["folders"]
    # Of the workspaces, the runner sees its own session's alone (the path to it, bind-mounted).
    assert seen["workspaces"] == [seen["session"]]
    for service in ("postgres", "redis", "metadata"):
        assert seen[service].startswith("refused"), (service, seen[service])
    assert seen["fork_bomb"].startswith("refused after"), seen["fork_bomb"]
    assert seen["fill_tmp"].startswith("refused after 64 MiB"), seen["fill_tmp"]
    assert seen["fill_workspace"].startswith("refused after 64 MiB"), seen["fill_workspace"]
    # The platform keeps serving: the other agent, and the attacker's next call.
    again = weather.start('/call get_weather {"city": "Oslo"}')["sessionId"]
    assert _result(weather, again)["isError"] is False


def test_a_sandboxed_tool_uses_kv_files_and_artifacts_through_the_host(live, alice, mallory, deployed, client_for):
    slug = deployed(alice, MISBEHAVING)
    client = live(alice, slug)
    session = client.start('/call keep {"key": "colour", "text": "teal"}')["sessionId"]
    result = _result(client, session)
    assert result["isError"] is False, result
    output = result["output"]
    assert output["kv"] == {"text": "teal"} and output["keys"] == ["colour"]
    assert output["file"] == "teal" and output["sameEtag"] is True
    assert output["files"] == ["/notes/colour.md"]
    listed = client_for(alice).get(f"/{slug}/v1/artifacts", {"sessionId": session}).json()
    assert [item["id"] for item in listed["artifacts"]] == [output["artifact"]]
    # The host's tenant checks apply on the platform's side: another tenant sees nothing.
    assert client_for(mallory).get(f"/{slug}/v1/artifacts", {"sessionId": session}).status_code == 404
    # The tree's hook ran in the sandbox too, and wrote through its own host.
    deadline = time.monotonic() + 20
    while not KVEntry.objects.filter(key=f"hooked:{session}", value="turn.completed").exists():
        assert time.monotonic() < deadline, "the sandboxed hook did not run"
        time.sleep(0.05)


def test_a_crash_a_memory_hog_and_a_hang_each_end_their_call_and_the_next_call_works(live, alice, deployed):
    client = live(alice, deployed(alice, MISBEHAVING))
    session = client.start("/call crash {}")["sessionId"]
    crashed = _result(client, session)
    assert crashed["isError"] is True
    assert "sandbox runner exited (killed by signal 9)" in crashed["output"]["error"]
    steps = [
        ('/call hog {"megabytes": 4096}', 2, "hog failed: MemoryError"),
        ("/call hang {}", 3, "hang timed out after 1 s"),
    ]
    for message, turns, expected in steps:
        assert client.follow_up(session, message).status_code == 202
        events = client.wait_for(session, "turn.completed", count=turns)
        result = [e["data"] for e in events if e["type"] == "action.result"][-1]
        assert result["isError"] is True and expected in result["output"]["error"], result
    assert client.follow_up(session, '/call ping {"word": "still here"}').status_code == 202
    events = client.wait_for(session, "turn.completed", count=4)
    assert [e["data"] for e in events if e["type"] == "action.result"][-1]["output"] == "still here"
