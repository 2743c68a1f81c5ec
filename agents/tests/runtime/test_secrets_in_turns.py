"""``ctx.secrets`` in a turn: the declared names, looked up again for each call that can
read them (dynamic instructions, each tool call, ``commit``), read-only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents.events import EventType

TREE = {
    "agent/agent.py": """
        from agents.sdk import define_agent

        agent = define_agent(secrets=["API_KEY"])
    """,
    "agent/instructions/zz_key.py": """
        from agents.sdk import define_instructions

        instructions = define_instructions(lambda ctx: "A key is set." if "API_KEY" in ctx.secrets else "No key.")
    """,
    "agent/tools/show.py": '''
        from agents.sdk import ToolContext, tool


        @tool
        def show(ctx: ToolContext) -> str:
            """Which value of the key this call sees."""
            return ctx.secrets["API_KEY"]
    ''',
    "agent/result.py": """
        from agents.sdk import define_result


        def commit(ctx):
            if ctx.secrets.get("API_KEY") != "value-3":
                raise ValueError("commit did not see the key of its own lookup")


        result = define_result(commit=commit)
    """,
}


def test_each_call_looks_the_declared_secrets_up_again(agent):
    agent.write(TREE)
    asked: list[tuple[str, ...]] = []

    async def load_secrets(names: Sequence[str]) -> Mapping[str, str]:
        asked.append(tuple(names))
        return {"API_KEY": f"value-{len(asked)}"}

    outcome = agent.run("/call show {}", load_secrets=load_secrets)

    assert outcome.status == "completed", outcome.failure
    [result] = agent.data(EventType.ACTION_RESULT)
    assert result["output"] == "value-2"  # the instructions' lookup was the first
    assert asked == [("API_KEY",)] * 3  # instructions, the tool call, commit


def test_an_agent_that_declares_no_secrets_is_never_looked_up_for(agent):
    agent.write(
        {"agent/tools/show.py": TREE["agent/tools/show.py"].replace('ctx.secrets["API_KEY"]', "dict(ctx.secrets)")}
    )
    asked: list[Sequence[str]] = []

    async def load_secrets(names: Sequence[str]) -> Mapping[str, str]:
        asked.append(names)
        return {"API_KEY": "never shown"}

    agent.run("/call show {}", load_secrets=load_secrets, secrets={"API_KEY": "not declared"})

    assert agent.data(EventType.ACTION_RESULT)[0]["output"] == {}
    assert asked == []
