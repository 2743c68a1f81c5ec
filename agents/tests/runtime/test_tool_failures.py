"""A tool's failure is the model's to see: an isError result, never a crashed turn."""

from __future__ import annotations

from agents.events import EventType

TOOLS = {
    "agent/tools/add.py": '''
        from agents.sdk import tool


        @tool
        def add(a: int, b: int = 1) -> int:
            """Add two numbers."""
            return a + b
    ''',
    "agent/tools/explode.py": '''
        from agents.sdk import tool


        @tool
        def explode(reason: str) -> str:
            """Always fails."""
            raise RuntimeError(reason)
    ''',
    "agent/tools/slow.py": '''
        import asyncio

        from agents.sdk import tool


        @tool(timeout=0.2)
        async def slow(seconds: float) -> str:
            """Takes its time."""
            await asyncio.sleep(seconds)
            return "finally"
    ''',
    "agent/tools/slow_sync.py": '''
        from agents.sdk import ToolContext, tool


        @tool(timeout=0.2)
        def slow_sync(ctx: ToolContext) -> str:
            """Blocks until cancelled."""
            ctx.signal.wait(5)
            return "stopped" if ctx.signal.cancelled else "never cancelled"
    ''',
}


def only_result(agent) -> dict:
    [result] = agent.data(EventType.ACTION_RESULT)
    return result


def test_arguments_that_fail_the_schema_are_an_error_result_and_the_turn_goes_on(agent):
    agent.write(TOOLS)
    outcome = agent.run('/call add {"a": "three", "c": 1}')
    result = only_result(agent)
    assert result["isError"] is True
    assert "invalid arguments for add" in result["output"]["error"]
    assert "'a': Input should be a valid integer" in result["output"]["error"]
    assert "'c' is not an argument of add (it takes a, b)" in result["output"]["error"]
    assert outcome.status == "completed"


def test_arguments_that_are_not_json_are_an_error_result(agent):
    agent.write(TOOLS)
    agent.run("/call add {not json")
    assert "not a JSON object" in only_result(agent)["output"]["error"]


def test_an_unknown_tool_is_an_error_result_naming_the_available_ones(agent):
    agent.write(TOOLS)
    agent.run("/call subtract {}")
    message = only_result(agent)["output"]["error"]
    assert message.startswith("unknown tool 'subtract'; available: add, explode, slow, slow_sync")


def test_a_tool_exception_is_an_error_result(agent):
    agent.write(TOOLS)
    outcome = agent.run('/call explode {"reason": "disk full"}')
    assert only_result(agent)["output"] == {"error": "explode failed: RuntimeError: disk full"}
    assert outcome.status == "completed"


def test_a_slow_async_tool_times_out(agent):
    agent.write(TOOLS)
    agent.run('/call slow {"seconds": 5}')
    assert only_result(agent)["output"] == {"error": "slow timed out after 0.2 s"}


def test_a_plain_tool_that_times_out_is_told_through_its_signal(agent):
    agent.write(TOOLS)
    agent.run("/call slow_sync {}")
    assert only_result(agent)["output"] == {"error": "slow_sync timed out after 0.2 s"}


def test_a_huge_output_is_truncated_with_a_note(agent):
    agent.write(
        {
            "agent/tools/dump.py": '''
                from agents.sdk import tool


                @tool
                def dump() -> str:
                    """A lot of text."""
                    return "x" * 300_000
            '''
        }
    )
    outcome = agent.run("/call dump {}")
    assert "[output truncated: 300002 characters, the first 100000 shown]" in outcome.text


def test_output_that_json_cannot_express_is_sent_as_text(agent):
    agent.write(
        {
            "agent/tools/when.py": '''
                import datetime

                from agents.sdk import tool


                @tool
                def when() -> dict:
                    """The epoch."""
                    return {"at": datetime.datetime(1970, 1, 1), "tags": {"a"}}
            '''
        }
    )
    outcome = agent.run("/call when {}")
    assert outcome.text == 'done: when -> {"at": "1970-01-01 00:00:00", "tags": "{\'a\'}"}'
