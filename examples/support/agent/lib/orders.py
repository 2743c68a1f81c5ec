"""A fixed order book, so the example runs offline and deterministically."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OrderStatus = Literal["processing", "shipped", "delivered", "cancelled"]


@dataclass(frozen=True)
class Order:
    id: str
    customer: str
    status: OrderStatus
    items: tuple[str, ...]
    total: float
    currency: str = "EUR"
    tracking_number: str | None = None


ORDERS: dict[str, Order] = {
    order.id: order
    for order in (
        Order("A1001", "ada@example.com", "delivered", ("linen shirt", "tote bag"), 64.90, tracking_number="EU123456"),
        Order("A1002", "grace@example.com", "shipped", ("wool scarf",), 39.00, tracking_number="EU987654"),
        Order("A1003", "alan@example.com", "processing", ("rain jacket", "beanie"), 129.50),
        Order("A1004", "edsger@example.com", "cancelled", ("notebook",), 12.00),
    )
}


def find_order(order_id: str) -> Order:
    """The order with this id (case-insensitive, surrounding spaces and '#' ignored).

    Raises:
        KeyError: for an unknown id.
    """
    key = order_id.strip().lstrip("#").upper()
    try:
        return ORDERS[key]
    except KeyError:
        raise KeyError(f"no order {order_id!r}; order ids look like 'A1001'") from None
