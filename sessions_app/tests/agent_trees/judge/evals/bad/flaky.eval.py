from typing import Any

from agents.sdk import define_eval

attempts = [0]


async def test(t: Any) -> None:
    attempts[0] += 1
    await t.send("hello")
    assert attempts[0] % 2 == 1, "every second attempt fails"


case = define_eval(test=test, tags=["bad"], repeat=2)
