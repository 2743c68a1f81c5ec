"""``agent run`` and ``agent trajectory``, as a user runs them."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command


def run_cli(*args: str) -> str:
    out = StringIO()
    call_command("agent", *args, stdout=out)
    return out.getvalue()


def test_run_prints_the_tool_call_the_reply_and_the_usage():
    printed = run_cli("run", "weather", "--message", '/call get_weather {"city": "Lyon"}')
    assert "status: completed" in printed
    assert "tool get_weather {'city': 'Lyon'}" in printed
    assert "reply: done: get_weather ->" in printed
    assert "usage:" in printed


def test_run_json_has_the_events_and_a_summary():
    document = json.loads(run_cli("run", "weather", "--message", "hello", "--json"))
    types = [event["type"] for event in document["events"]]
    assert types[0] == "session.started" and types[-1] == "turn.completed"
    assert [event["index"] for event in document["events"]] == list(range(len(types)))
    assert document["summary"]["reply"] == "echo: hello"
    assert document["summary"]["status"] == "completed"


def test_run_exits_non_zero_when_the_turn_fails():
    with pytest.raises(CommandError) as failure:
        run_cli("run", "weather", "--message", "/fail nope")
    assert failure.value.returncode == 1
    assert "nope" in str(failure.value)


def test_run_stops_at_an_approval_unless_told_what_to_decide():
    message = '/call close_issue {"issue_id": 12, "reason": "duplicate of #3"}'
    with pytest.raises(CommandError) as parked:
        run_cli("run", "triage", "--message", message)
    assert parked.value.returncode == 3
    # Approved, the call runs; the test model's answer has no severity, so triage's commit fails the turn.
    with pytest.raises(CommandError, match="result commit failed"):
        run_cli("run", "triage", "--message", message, "--approve")


def test_trajectory_summarises_a_saved_stream_like_run_does(tmp_path):
    document = json.loads(run_cli("run", "weather", "--message", '/call get_weather {"city": "Oslo"}', "--json"))
    saved = tmp_path / "events.ndjson"
    saved.write_text("\n".join(json.dumps(event) for event in document["events"]) + "\n")
    assert json.loads(run_cli("trajectory", "--events", str(saved), "--json")) == document["summary"]


def test_trajectory_reports_an_unreadable_file(tmp_path):
    bad = tmp_path / "bad.ndjson"
    bad.write_text("{not json\n")
    with pytest.raises(CommandError, match="cannot read"):
        run_cli("trajectory", "--events", str(bad))
