"""Approval-gated calls park the turn; a decision resumes it, even in a new process."""

from __future__ import annotations

import asyncio
import json

from agents.events import EventType
from agents.runtime.turn import Decision, pending_calls, resume_turn

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
    [requested] = agent.data(EventType.ACTION_APPROVAL_REQUESTED)
    assert (requested["toolName"], requested["args"]) == ("close_issue", {"issue": 7})
    assert state["pending"] == [requested["callId"]]
    assert pending_calls(state) == [requested]
    assert not agent.data(EventType.ACTION_RESULT)


def test_approving_runs_the_call_and_finishes_the_turn(agent):
    state = park(agent, '/call close_issue {"issue": 7}')
    [call_id] = state["pending"]
    outcome = resume(agent, state, {call_id: Decision(True, "looks right", "alice")})
    assert outcome.status == "completed"
    assert outcome.text == 'done: close_issue -> "closed #7"'
    [resolved] = agent.data(EventType.ACTION_APPROVAL_RESOLVED)
    assert resolved == {
        "callId": call_id,
        "toolName": "close_issue",
        "decision": "approve",
        "reason": "looks right",
        "decidedBy": "alice",
    }
    assert agent.types()[-1] == "turn.completed"


def test_denying_returns_an_error_result_to_the_model(agent):
    state = park(agent, '/call close_issue {"issue": 7}')
    outcome = resume(agent, state, {state["pending"][0]: Decision(False, "not a duplicate", "bob")})
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
    assert [call["args"]["severity"] for call in pending_calls(state)] == ["critical"]


def test_ungated_calls_of_the_same_step_run_before_the_turn_parks(agent):
    state = park(agent, '/call set_severity {"issue": 1, "severity": "low"}\n/call close_issue {"issue": 1}')
    assert [r["output"] for r in agent.data(EventType.ACTION_RESULT)] == ["#1 is low"]
    [gated] = pending_calls(state)
    assert gated["toolName"] == "close_issue"
    outcome = resume(agent, state, {gated["callId"]: Decision(True)})
    assert outcome.text == 'done: set_severity -> "#1 is low"\ndone: close_issue -> "closed #1"'


def test_resuming_without_a_decision_for_every_pending_call_is_refused(agent):
    import pytest

    state = park(agent, '/call close_issue {"issue": 7}')
    with pytest.raises(KeyError, match=state["pending"][0]):
        resume(agent, state, {})


SUBAGENT_WITH_GATE = {
    "agent/subagents/clerk/agent.py": """
        from agents.sdk import define_agent

        agent = define_agent(description="Files paperwork.")
    """,
    "agent/subagents/clerk/instructions.md": "You file things.",
    "agent/subagents/clerk/tools/file_claim.py": """
        from agents.sdk import tool


        @tool(effect="write", needs_approval=True)
        def file_claim(amount: int) -> str:
            \"\"\"File an insurance claim.\"\"\"
            return f"claim for {amount} filed"
    """,
}


def test_a_subagents_gated_call_parks_the_whole_turn_and_resumes_inside_the_subagent(agent):
    agent.write(SUBAGENT_WITH_GATE)
    outcome = agent.run('/subagent clerk /call file_claim {"amount": 120}')
    assert outcome.status == "parked"
    state = json.loads(json.dumps(outcome.state))
    [gated] = pending_calls(state)
    assert (gated["toolName"], gated["args"]) == ("file_claim", {"amount": 120})
    [requested] = agent.data(EventType.ACTION_APPROVAL_REQUESTED)
    assert requested["callId"] == gated["callId"] and "parentCallId" in requested
    assert not agent.data(EventType.SUBAGENT_COMPLETED)

    outcome = resume(agent, state, {gated["callId"]: Decision(True, "", "alice")})
    assert outcome.status == "completed", outcome.failure
    [completed] = agent.data(EventType.SUBAGENT_COMPLETED)
    assert completed["result"] == 'done: file_claim -> "claim for 120 filed"'
    assert outcome.text == f"done: clerk -> {json.dumps(completed['result'])}"
    assert agent.types().count("turn.completed") == 1
