"""A turn's spans rebuilt from its events (``agents.telemetry.turn_telemetry``): the
log of a turn that parked on an approval and was resumed (as a resumed or taken-up turn
is, from what its attempts logged) makes one trace, timed by the events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import StatusCode

from agents.telemetry import TurnFacts, trace_id_of, turn_telemetry

T0 = datetime(2026, 1, 1, tzinfo=UTC)
USAGE = {"inputTokens": 7, "outputTokens": 2}


def _log() -> list[tuple[str, dict, datetime]]:
    at = lambda seconds: T0 + timedelta(seconds=seconds)  # noqa: E731
    calls = [
        {"callId": "call_a", "toolName": "deploy", "args": {"target": "prod-secret"}},
        {"callId": "call_b", "toolName": "lookup", "args": {"q": "x"}},
    ]
    return [
        ("message.received", {"text": "ship it"}, at(0)),
        ("turn.started", {"model": "openai:gpt-4o"}, at(1)),
        ("step.started", {"step": 1}, at(1)),
        ("step.completed", {"step": 1, "usage": USAGE}, at(2)),
        ("actions.requested", {"calls": calls}, at(2)),
        ("action.approval_requested", {"callId": "call_a", "toolName": "deploy"}, at(2)),
        ("action.result", {"callId": "call_b", "toolName": "lookup", "output": 1, "isError": False}, at(3)),
        # Parked for an hour; the decision resumes the turn (perhaps on another worker).
        ("action.approval_resolved", {"callId": "call_a", "decision": "approve"}, at(3600)),
        ("action.result", {"callId": "call_a", "toolName": "deploy", "output": "boom", "isError": True}, at(3605)),
        ("step.started", {"step": 2}, at(3605)),
        ("step.completed", {"step": 2, "usage": USAGE}, at(3606)),
        ("turn.completed", {"result": "done", "usage": {"inputTokens": 14, "outputTokens": 4}, "cost": 0.5}, at(3606)),
    ]


def test_a_resumed_turn_is_one_trace_timed_by_its_events_without_content():
    facts = TurnFacts(session_id="ses_1", agent="ops", turn_id="turn_1", channel="http", message="ship it")
    built = turn_telemetry(_log(), facts, Resource.create({}))
    spans = {span.name + ":" + str((span.attributes or {}).get("cursor.tool.name", "")): span for span in built.spans}
    turn, deploy, lookup = spans["agent_sdk.turn:"], spans["agent_sdk.tool:deploy"], spans["agent_sdk.tool:lookup"]
    assert {span.context.trace_id for span in built.spans} == {trace_id_of("turn_1")}
    assert turn.parent is None and deploy.parent.span_id == lookup.parent.span_id == turn.context.span_id
    # The tool's time starts at the decision, not at the request: the wait for a person is not the tool's.
    assert (deploy.end_time - deploy.start_time) / 1e9 == 5
    assert (turn.end_time - turn.start_time) / 1e9 == 3605
    assert deploy.status.status_code == StatusCode.ERROR and deploy.attributes["cursor.tool.status"] == "error"
    assert turn.attributes["gen_ai.provider.name"] == "openai" and turn.attributes["gen_ai.request.model"] == "gpt-4o"
    assert (turn.attributes["gen_ai.usage.input_tokens"], built.cost) == (14, 0.5)
    assert sorted(s.name for s in built.spans).count("chat gpt-4o") == 2
    assert built.tool_calls == [("lookup", "success"), ("deploy", "error")]
    assert "prod-secret" not in repr([dict(s.attributes or {}) for s in built.spans])
    # Built again (an export repeated after a crash): the same ids.
    again = turn_telemetry(_log(), facts, Resource.create({}))
    assert [s.context.span_id for s in again.spans] == [s.context.span_id for s in built.spans]


def test_content_only_when_asked_and_authored_attributes_never_replace_the_platforms():
    facts = TurnFacts(
        session_id="ses_1",
        agent="ops",
        turn_id="turn_1",
        channel="http",
        message="ship it",
        include_content=True,
        extra={"call_a": {"agent_sdk.agent": "someone-else", "deploy.region": "eu"}},
    )
    built = turn_telemetry(_log(), facts, Resource.create({}))
    (deploy,) = [s for s in built.spans if (s.attributes or {}).get("cursor.tool.name") == "deploy"]
    assert deploy.attributes["agent_sdk.tool.arguments"] == '{"target": "prod-secret"}'
    assert deploy.attributes["deploy.region"] == "eu"
    (turn,) = [s for s in built.spans if s.name == "agent_sdk.turn"]
    assert (turn.attributes["agent_sdk.turn.input"], turn.attributes["agent_sdk.turn.output"]) == ("ship it", "done")
