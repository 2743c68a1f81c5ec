from __future__ import annotations

from agents.events import EventType
from agents.sdk import SessionInfo

SUBAGENT = {
    "agent/subagents/researcher/agent.py": """
        from agents.sdk import define_agent

        agent = define_agent(description="Finds things out.")
    """,
    "agent/subagents/researcher/instructions.md": "You research.",
    "agent/subagents/researcher/tools/lookup.py": '''
        from agents.sdk import tool


        @tool
        def lookup(topic: str) -> str:
            """Look a topic up."""
            return f"facts about {topic}"
    ''',
}

RESULT = """
from agents.sdk import define_result

seen = []


def commit(ctx):
    if "reject" in ctx.text:
        raise ValueError("the answer was rejected")
    seen.append(ctx.text)


result = define_result(commit=commit)
"""


def test_a_subagent_is_a_tool_and_its_events_carry_the_parent_call(agent):
    agent.write(SUBAGENT)
    outcome = agent.run("/subagent researcher tell me about owls")
    assert outcome.status == "completed"
    assert outcome.text == 'done: researcher -> "echo: tell me about owls"'
    [called] = agent.data(EventType.SUBAGENT_CALLED)
    call_id = called["callId"]
    assert called == {"callId": call_id, "subagent": "researcher", "message": "tell me about owls"}
    [completed] = agent.data(EventType.SUBAGENT_COMPLETED)
    assert completed == {"callId": call_id, "subagent": "researcher", "result": "echo: tell me about owls"}
    nested = [e for e in agent.sink.events if e.data.get("parentCallId") == call_id]
    assert {str(e.type) for e in nested} >= {"step.started", "message.completed", "step.completed"}
    # Only the parent's turn is framed by turn events.
    assert agent.types().count("turn.started") == 1 and agent.types().count("turn.completed") == 1


def test_a_subagent_has_its_own_tools(agent):
    agent.write(SUBAGENT)
    agent.write({"agent/subagents/researcher/instructions.md": "You research."})
    surface = agent.surface()
    assert list(surface.subagents["researcher"].tools) == ["lookup"]
    assert "lookup" not in surface.tools


def test_the_result_commit_sees_the_final_text(agent):
    agent.write({"agent/result.py": RESULT})
    outcome = agent.run("accept this")
    assert outcome.status == "completed"
    assert agent.types()[-1] == "turn.completed"


def test_a_commit_that_raises_fails_the_turn(agent):
    agent.write({"agent/result.py": RESULT})
    outcome = agent.run("reject this")
    assert outcome.status == "failed"
    assert agent.data(EventType.TURN_FAILED) == [
        {"message": "result commit failed: ValueError: the answer was rejected"}
    ]
    assert "turn.completed" not in agent.types()


def test_an_empty_final_answer_fails_a_turn_with_a_commit(agent):
    agent.write({"agent/result.py": RESULT})
    outcome = agent.run("/stream 0")
    assert outcome.status == "failed"
    assert "final answer is empty" in outcome.failure


def test_a_dry_run_skips_the_commit(agent):
    agent.write({"agent/result.py": RESULT})
    outcome = agent.run("reject this", session=SessionInfo(id="ses_dry", agent="agent", dry_run=True))
    assert outcome.status == "completed"
