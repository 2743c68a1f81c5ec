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


def ndjson(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_run_prints_the_reply_as_it_streams_then_the_summary():
    printed = run_cli("run", "weather", "/stream 3\nhello")
    reply, summary = printed.split("\n", 1)
    assert reply == "t0 t1 t2 echo: hello"
    assert summary.startswith("status: completed\n") and "reply: t0 t1 t2 echo: hello" in summary


def test_run_takes_the_message_once():
    with pytest.raises(CommandError) as twice:
        run_cli("run", "weather", "hello", "--message", "hello")
    assert twice.value.returncode == 2


def test_run_json_prints_the_events_as_ndjson_one_per_line():
    events = ndjson(run_cli("run", "weather", "--message", "hello", "--json"))
    types = [event["type"] for event in events]
    assert types[0] == "session.started" and types[-1] == "turn.completed"
    assert [event["index"] for event in events] == list(range(len(types)))
    assert [event["data"]["text"] for event in events if event["type"] == "message.completed"] == ["echo: hello"]


def test_run_exits_non_zero_when_the_turn_fails():
    with pytest.raises(CommandError) as failure:
        run_cli("run", "weather", "--message", "/fail nope")
    assert failure.value.returncode == 1
    assert "nope" in str(failure.value)


def test_run_stops_at_an_approval_unless_told_what_to_decide():
    message = '/call set_severity {"number": 12, "severity": "critical"}'
    with pytest.raises(CommandError) as parked:
        run_cli("run", "triage", "--message", message)
    assert parked.value.returncode == 3
    approved = run_cli("run", "triage", "--message", message, "--approve")
    assert "status: completed" in approved and "severity:critical" in approved
    # Denied, the model's answer names no severity, so triage's result check fails the turn.
    with pytest.raises(CommandError, match="the triage has no 'Severity: <level>' line"):
        run_cli("run", "triage", "--message", message, "--deny")


def test_trajectory_reads_what_run_json_prints(tmp_path):
    message = '/call get_weather {"city": "Oslo"}'
    saved = tmp_path / "events.ndjson"
    saved.write_text(run_cli("run", "weather", "--message", message, "--json"))
    summary = json.loads(run_cli("trajectory", "--events", str(saved), "--json"))
    assert summary["status"] == "completed" and summary["reply"].startswith("done: get_weather ->")
    assert [(call["toolName"], call["args"]) for call in summary["toolCalls"]] == [("get_weather", {"city": "Oslo"})]
    printed = run_cli("trajectory", "--events", str(saved))
    # What `agent run` prints after the reply it streamed.
    ran = run_cli("run", "weather", "--message", message)
    assert ran.endswith(printed) and ran.startswith("done: get_weather ->")


def test_a_provider_model_without_its_key_fails_the_turn_saying_so(settings):
    settings.PLATFORM = {**settings.PLATFORM, "DEFAULT_MODEL": "openai:gpt-4.1", "OPENAI_API_KEY": ""}
    with pytest.raises(CommandError, match=r"OPENAI_API_KEY is not set: the model 'openai:gpt-4\.1' needs it"):
        run_cli("run", "weather", "--message", "hello")


def test_validate_warns_about_a_provider_model_without_its_key(settings):
    settings.PLATFORM = {**settings.PLATFORM, "DEFAULT_MODEL": "anthropic:claude-sonnet-4", "ANTHROPIC_API_KEY": ""}
    printed = run_cli("validate")
    assert "weather: ok (0 error(s), 1 warning(s))" in printed
    warning = "warning: ANTHROPIC_API_KEY is not set, so every turn on the model 'anthropic:claude-sonnet-4' fails"
    assert warning in printed
    settings.PLATFORM = {**settings.PLATFORM, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"}
    assert "is not set" not in run_cli("validate")


def test_trajectory_reports_an_unreadable_file(tmp_path):
    bad = tmp_path / "bad.ndjson"
    bad.write_text("{not json\n")
    with pytest.raises(CommandError, match="cannot read"):
        run_cli("trajectory", "--events", str(bad))
