"""An order lookup: the tool gets the order id and the model never sees the customer."""

from __future__ import annotations

from agents.sdk import define_eval
from agents.sdk.evals import EvalTest, equals, includes, matches, not_


async def test(t: EvalTest) -> None:
    """Look up order A1001 and check what the tool returned to the model."""
    turn = await t.send('/call lookup_order {"order_id": "A1001"}')
    turn.expect_ok()
    t.called("lookup_order", times=1, args={"order_id": matches(r"^A\d{4}$")})
    output = turn.tool_calls[0]["output"]
    t.check(output["status"], equals("delivered"))
    t.check(output, not_(includes("customer")))  # the e-mail address stays out of the prompt
    t.check(t.reply, includes("EU123456"))


case = define_eval(test=test, description="lookup_order returns the status and hides the customer", tags=["orders"])
