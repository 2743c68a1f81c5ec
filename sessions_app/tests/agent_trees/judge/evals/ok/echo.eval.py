from typing import Any

from agents.sdk import define_eval
from agents.sdk.evals import equals, includes


async def test(t: Any) -> None:
    turn = await t.send("hello")
    t.check(turn.message, equals("echo: hello"))
    second = await t.send("again")
    t.check(t.reply, includes("again"))
    assert second.index == 1 and t.session_id == turn.session_id
    t.succeeded()


case = define_eval(test=test, description="echoes twice on one session", tags=["smoke"])
