from typing import Any

from agents.sdk import define_eval
from agents.sdk.evals import includes


async def test(t: Any) -> None:
    turn = await t.send("hello")
    # The agent names no model, so the turn ran on the evals config's.
    t.check(turn.error, includes("'nowhere:eval-model'"))


case = define_eval(test=test, description="an agent that names no model runs on the config's")
