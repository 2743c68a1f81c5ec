"""A case run three times (``repeat=3``): passed only if every attempt passes, flaky if
some do. It checks the tool's arguments with a matcher."""

from __future__ import annotations

from agents.sdk import define_eval
from agents.sdk.evals import EvalTest, matches


async def test(t: EvalTest) -> None:
    """Ask for Paris's weather; the call's city must look like a capitalised name."""
    turn = await t.send('/call get_weather {"city": "Paris"}')
    turn.expect_ok()
    t.called("get_weather", args={"city": matches(r"^[A-Z][a-z]+$")})
    t.check(turn.tool_calls[0]["output"], lambda output: output["city"] == "Paris")


case = define_eval(test=test, description="repeat=3 and a matcher on tool arguments", tags=["tools"], repeat=3)
