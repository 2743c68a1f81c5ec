"""``cancel_order``: cancel an order that has not shipped. A person approves every call."""

from __future__ import annotations

from typing import Any

from agents.sdk import ToolContext, tool


@tool(effect="write", needs_approval=True)
async def cancel_order(ctx: ToolContext, order_id: str, reason: str) -> dict[str, Any]:
    """Cancel an order that has not shipped yet. Needs a person's approval.

    Args:
        order_id: The order number.
        reason: Why the customer cancels, in a few words.
    """
    currency = ctx.extension.config["currency"] if ctx.extension is not None else "EUR"
    # A real extension would call the shop's order API here.
    return {"orderId": order_id, "status": "cancelled", "reason": reason, "refundCurrency": currency}
