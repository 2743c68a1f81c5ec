"""``lookup_order``: an order's status, items and tracking number."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agents.sdk import ToolContext, tool

from ..lib.orders import find_order


@tool(effect="read")
async def lookup_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Look up an order: status, items, total and, once shipped, the tracking number.

    Args:
        order_id: The order number, e.g. "A1001".
    """
    order = asdict(find_order(order_id))
    order.pop("customer")  # the model does not need the customer's e-mail address
    return order
