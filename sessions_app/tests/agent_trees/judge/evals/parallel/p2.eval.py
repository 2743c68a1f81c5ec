from typing import Any

from agents.sdk import define_eval


async def test(t: Any) -> None:
    await t.send("/sleep 1\nslept")
    t.succeeded()


case = define_eval(test=test, tags=["parallel"])
