from typing import Any

from agents.sdk import define_eval
from agents.sdk.evals import equals


async def test(t: Any) -> None:
    turn = await t.send("hello")
    t.check(turn.message, equals("echo: hello"))
    t.succeeded()


case = define_eval(test=test, description="an agent that names its model keeps it")
