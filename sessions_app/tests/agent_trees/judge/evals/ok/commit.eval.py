from typing import Any

from agents.sdk import define_eval
from agents.sdk.evals import EvalAssertionError


async def test(t: Any) -> None:
    turn = await t.send("break")
    assert not turn.ok and "refused in a eval session" in (turn.error or ""), turn.error
    try:
        turn.expect_ok()
    except EvalAssertionError:
        return
    raise AssertionError("expect_ok did not raise")


case = define_eval(
    test=test, description="commit runs, with purpose eval, and its raise fails the turn", tags=["tools"]
)
