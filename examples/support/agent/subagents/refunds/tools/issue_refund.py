"""``issue_refund``: refund (part of) an order. A person approves every call."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agents.sdk import ToolContext, tool

from ....lib.orders import find_order


@tool(effect="write", needs_approval=True)
async def issue_refund(
    ctx: ToolContext,
    order_id: str,
    amount: Annotated[float, Field(gt=0)],
    reason: Literal["damaged", "not_received", "wrong_item", "changed_mind", "other"],
    note: str = "",
) -> dict[str, Any]:
    """Refund an amount of an order to the original payment method. Needs a person's approval.

    Args:
        order_id: The order number, e.g. "A1001".
        amount: The amount to refund, in the order's currency; at most the order total.
        reason: Why the customer is refunded.
        note: A short note for the accounting team.
    """
    order = find_order(order_id)
    if order.status == "cancelled":
        raise ValueError(f"order {order.id} is cancelled and was already refunded")
    if amount > order.total:
        raise ValueError(f"{amount:.2f} is more than the order total {order.total:.2f} {order.currency}")
    # A real agent would call the payment provider here; the example only reports the refund.
    return {
        "refundId": f"R-{order.id}-{round(amount * 100)}",
        "orderId": order.id,
        "amount": round(amount, 2),
        "currency": order.currency,
        "reason": reason,
        "note": note,
    }
