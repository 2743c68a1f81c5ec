from typing import Any

from agents.sdk import define_eval
from agents.sdk.evals import equals, not_


async def test(t: Any) -> None:
    await t.send("hello")
    t.check(t.reply, not_(equals("echo: hello")))
    t.called("add")


case = define_eval(test=test, description="gates that fail", tags=["bad"])
