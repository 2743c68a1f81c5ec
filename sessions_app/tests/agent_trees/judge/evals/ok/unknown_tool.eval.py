from typing import Any

from agents.sdk import define_eval


async def test(t: Any) -> None:
    turn = await t.send("/call nope {}")
    t.check(turn.tool_calls, lambda calls: len(calls) == 1 and calls[0]["isError"])
    t.succeeded()


case = define_eval(test=test, description="a tool that does not exist goes back to the model", tags=["tools"])
