from typing import Any

from agents.sdk import define_eval
from agents.sdk.evals import matches


async def test(t: Any) -> None:
    turn = await t.send('/call add {"a": 2, "b": 3}')
    turn.expect_ok()
    t.called("add", times=1, args={"a": 2, "b": matches("^3$")})
    t.check(turn.tool_calls[0]["output"], lambda output: output == 5)


case = define_eval(test=test, description="one add call", tags=["smoke", "tools"])
