"""An unknown order id: the tool's error goes back to the model and the turn still completes."""

from __future__ import annotations

from agents.sdk import define_eval
from agents.sdk.evals import EvalTest, includes


async def test(t: EvalTest) -> None:
    """Ask for an order that does not exist."""
    turn = await t.send('/call lookup_order {"order_id": "Z9999"}')
    t.check(turn.tool_calls[0]["isError"], bool)
    t.check(str(turn.tool_calls[0]["output"]), includes("order ids look like"))
    t.succeeded()


case = define_eval(test=test, description="an unknown order is a tool error, not a failed turn", tags=["orders"])
