"""Approval-gated calls park the turn; a decision resumes it, even in a new process."""

from __future__ import annotations

import asyncio
import json

from agents.runtime.turn import Decision, resume_turn
from sessions_app.events import EventType

GATED = {
    "agent/tools/close_issue.py": '''
        from agents.sdk import tool


        @tool(effect="write", needs_approval=True)
        def close_issue(issue: int) -> str:
            """Close an issue."""
            return f"closed #{issue}"
    ''',
    "agent/tools/set_severity.py": '''
        from agents.sdk import tool


        @tool(effect="write", needs_approval=lambda args: args["severity"] == "critical")
        def set_severity(issue: int, severity: str) -> str:
            """Set an issue's severity."""
            return f"#{issue} is {severity}"
    ''',
}


def park(agent, message: str):
    agent.write(GATED)
    outcome = agent.run(message)
    assert outcome.status == "parked"
    # The parked state survives a restart: it is plain JSON.
    return json.loads(json.dumps(outcome.state))


def resume(agent, state, decisions):
    # A fresh discovery of the tree stands in for a new worker process.
    return asyncio.run(resume_turn(agent.surface(), agent.request(""), state, decisions, agent.sink, agent.settings))


def test_a_gated_call_parks_the_turn_with_an_approval_request(agent):
    state = park(agent, '/call close_issue {"issue": 7}')
    assert agent.types()[-1] == "action.approval_requested"
    assert agent.data(EventType.ACTION_APPROVAL_REQUESTED) == [
        {"callId": "call_0_0", "toolName": "close_issue", "args": {"issue": 7}}
    ]
    assert state["pending"] == ["call_0_0"]
    assert not agent.data(EventType.ACTION_RESULT)


def test_approving_runs_the_call_and_finishes_the_turn(agent):
    state = park(agent, '/call close_issue {"issue": 7}')
    outcome = resume(agent, state, {"call_0_0": Decision(True, "looks right", "alice")})
    assert outcome.status == "completed"
    assert outcome.text == 'done: close_issue -> "closed #7"'
    [resolved] = agent.data(EventType.ACTION_APPROVAL_RESOLVED)
    assert resolved == {
        "callId": "call_0_0",
        "toolName": "close_issue",
        "decision": "approve",
        "reason": "looks right",
        "decidedBy": "alice",
    }
    assert agent.types()[-1] == "turn.completed"


def test_denying_returns_an_error_result_to_the_model(agent):
    state = park(agent, '/call close_issue {"issue": 7}')
    outcome = resume(agent, state, {"call_0_0": Decision(False, "not a duplicate", "bob")})
    assert outcome.status == "completed"
    [result] = agent.data(EventType.ACTION_RESULT)
    assert result["isError"] is True
    assert result["output"] == {"error": "the call was denied: not a duplicate"}
    assert "denied" in outcome.text


def test_a_predicate_asks_only_for_the_arguments_it_names(agent):
    agent.write(GATED)
    outcome = agent.run('/call set_severity {"issue": 1, "severity": "high"}')
    assert outcome.status == "completed"
    state = park(agent, '/call set_severity {"issue": 1, "severity": "critical"}')
    assert state["pending"] == ["call_0_0"]


def test_ungated_calls_of_the_same_step_run_before_the_turn_parks(agent):
    state = park(agent, '/call set_severity {"issue": 1, "severity": "low"}\n/call close_issue {"issue": 1}')
    assert [r["output"] for r in agent.data(EventType.ACTION_RESULT)] == ["#1 is low"]
    assert state["pending"] == ["call_0_1"]
    outcome = resume(agent, state, {"call_0_1": Decision(True)})
    assert outcome.text == 'done: set_severity -> "#1 is low"\ndone: close_issue -> "closed #1"'


def test_resuming_without_a_decision_for_every_pending_call_is_refused(agent):
    import pytest

    state = park(agent, '/call close_issue {"issue": 7}')
    with pytest.raises(KeyError, match="call_0_0"):
        resume(agent, state, {})
