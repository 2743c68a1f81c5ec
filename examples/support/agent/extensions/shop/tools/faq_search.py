"""``shop__faq_search``, overridden: search this shop's own FAQ instead of the generic one."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.sdk import ToolContext, tool

from ....lib.faq import search


@tool(effect="read")
async def faq_search(
    ctx: ToolContext, query: str, limit: Annotated[int, Field(ge=1, le=5)] = 3
) -> list[dict[str, str]]:
    """Search the shop's FAQ (delivery, returns, refunds, addresses) for a customer's question.

    Args:
        query: The customer's question, or its key words.
        limit: Maximum number of entries to return.
    """
    return search(query, limit)
