from __future__ import annotations

from agents.events import EventType
from agents.sdk import SessionInfo

ECHO_TOOL = '''
from agents.sdk import tool


@tool
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()
'''


def runs_of(types: list[str]) -> list[str]:
    """The types with each run of repeats shown once."""
    return [kind for n, kind in enumerate(types) if n == 0 or types[n - 1] != kind]


def test_an_echo_turn_streams_the_reply_and_completes_with_word_count_usage(agent):
    outcome = agent.run("hello there")
    assert outcome.status == "completed"
    assert outcome.text == "echo: hello there"
    # The first delta goes out at once, the ones after it coalesced: one message.appended
    # for the test model's single delta, two for a provider that streams words.
    assert runs_of(agent.types()) == [
        "turn.started",
        "step.started",
        "message.appended",
        "message.completed",
        "step.completed",
        "turn.completed",
    ]
    appended = agent.data(EventType.MESSAGE_APPENDED)
    assert len(appended) <= 2
    assert "".join(event["text"] for event in appended) == "echo: hello there"
    [completed] = agent.data(EventType.TURN_COMPLETED)
    assert completed["result"] == "echo: hello there"
    assert completed["usage"]["outputTokens"] == 3
    assert completed["usage"]["inputTokens"] == len("You are a test agent.".split()) + 2
    # Only the test model has a price (zero); the wire-format stand-ins have none.
    assert completed["cost"] == (0.0 if agent.model_id == "test" else None)
    assert agent.data(EventType.TURN_STARTED) == [{"model": agent.model_id, "testModel": agent.model_id == "test"}]


def test_many_small_deltas_are_coalesced_into_fewer_appended_events(agent):
    outcome = agent.run("/stream 3000")
    appended = agent.data(EventType.MESSAGE_APPENDED)
    assert 1 <= len(appended) < 3000
    assert "".join(event["text"] for event in appended) == outcome.text
    assert outcome.text.split() == [f"t{n}" for n in range(3000)]


def test_a_failing_step_ends_the_turn_with_its_message(agent):
    outcome = agent.run("/fail the provider exploded")
    assert outcome.status == "failed"
    assert agent.types()[-1] == "turn.failed"
    [failed] = agent.data(EventType.TURN_FAILED)
    assert "the provider exploded" in failed["message"]


def test_a_tool_call_runs_and_its_result_goes_back_to_the_model(agent):
    agent.write({"agent/tools/shout.py": ECHO_TOOL})
    outcome = agent.run('/call shout {"text": "hi"}')
    assert outcome.text == 'done: shout -> "HI"'
    [requested] = agent.data(EventType.ACTIONS_REQUESTED)
    [call] = requested["calls"]
    assert (call["toolName"], call["args"]) == ("shout", {"text": "hi"})
    assert agent.data(EventType.ACTION_RESULT) == [
        {"callId": call["callId"], "toolName": "shout", "output": "HI", "isError": False}
    ]


def test_call_ids_are_unique_across_turns_and_steps(agent):
    agent.write({"agent/tools/shout.py": ECHO_TOOL})
    agent.run('/call shout {"text": "a"}\n/call shout {"text": "b"}')
    agent.run('/call shout {"text": "c"}')
    ids = [call["callId"] for event in agent.data(EventType.ACTIONS_REQUESTED) for call in event["calls"]]
    assert len(ids) == len(set(ids)) == 3


def test_several_calls_in_one_step_run_in_order(agent):
    agent.write({"agent/tools/shout.py": ECHO_TOOL})
    outcome = agent.run('/call shout {"text": "a"}\n/call shout {"text": "b"}')
    [requested] = agent.data(EventType.ACTIONS_REQUESTED)
    assert [call["args"] for call in requested["calls"]] == [{"text": "a"}, {"text": "b"}]
    assert [result["output"] for result in agent.data(EventType.ACTION_RESULT)] == ["A", "B"]
    assert outcome.text == 'done: shout -> "A"\ndone: shout -> "B"'


def test_the_conversation_so_far_is_sent_with_a_follow_up(agent):
    first = agent.run("first message")
    second = agent.run("second message", history=first.messages)
    assert second.text == "echo: second message"
    assert [m.role for m in second.messages] == ["user", "assistant", "user", "assistant"]


def test_a_skill_body_is_loaded_on_demand(agent):
    agent.write({"agent/skills/refunds.md": "---\ndescription: How to refund\n---\nStep 1: check the order."})
    outcome = agent.run('/call load_skill {"name": "refunds"}')
    assert outcome.text == 'done: load_skill -> "Step 1: check the order."'


def test_the_turn_stops_after_the_step_limit(agent):
    import asyncio

    from agents.runtime.turn import RuntimeSettings, run_turn

    agent.write({"agent/tools/shout.py": ECHO_TOOL})
    # The test model answers tool results with text, so one call needs two steps.
    outcome = asyncio.run(
        run_turn(agent.surface(), agent.request('/call shout {"text": "x"}'), agent.sink, RuntimeSettings(max_steps=1))
    )
    assert outcome.status == "failed"
    assert "more than 1 model steps" in outcome.failure


def test_dry_run_stubs_write_tools_and_runs_read_tools(agent):
    agent.write(
        {
            "agent/tools/shout.py": ECHO_TOOL,
            "agent/tools/delete_all.py": '''
                from agents.sdk import tool


                @tool(effect="write")
                def delete_all(table: str) -> str:
                    """Delete every row."""
                    raise AssertionError("a dry run must not reach a write tool")
            ''',
        }
    )
    session = SessionInfo(id="ses_dry", agent="agent", dry_run=True)
    agent.run('/call delete_all {"table": "users"}\n/call shout {"text": "ok"}', session=session)
    stub, read = agent.data(EventType.ACTION_RESULT)
    assert stub["stubbed"] is True and stub["isError"] is False
    assert stub["output"] == {"stubbed": True, "toolName": "delete_all", "args": {"table": "users"}}
    assert read["output"] == "OK" and "stubbed" not in read


def test_a_provider_model_really_goes_over_http(agent, model_server):
    before = len(model_server.requests)
    agent.write({"agent/tools/shout.py": ECHO_TOOL})
    agent.run('/call shout {"text": "hi"}')
    sent = model_server.requests[before:]
    if agent.model_id == "test":
        assert sent == []
    else:
        assert len(sent) == 2  # the call, then the answer to its result
        assert sent[0].body["tools"][0]["name" if "anthropic" in agent.model_id else "function"]
