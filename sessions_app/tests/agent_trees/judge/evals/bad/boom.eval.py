from typing import Any

from agents.sdk import define_eval


async def test(t: Any) -> None:
    raise RuntimeError("the case itself broke")


case = define_eval(test=test, tags=["bad"])
