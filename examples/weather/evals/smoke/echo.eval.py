"""Smoke test: the test model echoes plain text and calls a tool on ``/call``."""

from __future__ import annotations

from agents.sdk import define_eval
from agents.sdk.evals import EvalTest, equals, includes


async def test(t: EvalTest) -> None:
    """Echo a greeting, then ask for Lyon's weather through the tool."""
    turn = await t.send("hello")
    t.check(turn.message, equals("echo: hello"))

    turn = await t.send('/call get_weather {"city": "Lyon"}')
    t.called("get_weather", times=1, args={"city": includes("Ly")})
    t.check(t.reply, includes("Lyon"))
    t.succeeded()


case = define_eval(test=test, description="echo and one get_weather call", tags=["smoke"])
