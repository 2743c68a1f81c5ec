from typing import Any

from agents.sdk import define_eval


async def test(t: Any) -> None:
    await t.send("/sleep 30")


case = define_eval(test=test, tags=["hang"])
