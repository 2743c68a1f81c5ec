"""``faq_search``: a generic e-commerce FAQ; mounting agents usually override it with their own."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.sdk import ToolContext, tool

GENERIC_FAQ = {
    "How do I track my order?": "Use the tracking number from your shipping confirmation.",
    "Can I cancel my order?": "Yes, until it ships.",
    "How do I return an item?": "Follow the returns procedure on the shop's website.",
}


@tool(effect="read")
async def faq_search(
    ctx: ToolContext, query: str, limit: Annotated[int, Field(ge=1, le=5)] = 3
) -> list[dict[str, str]]:
    """Search the FAQ for entries that answer a customer's question.

    Args:
        query: The customer's question, or its key words.
        limit: Maximum number of entries to return.
    """
    words = set(query.lower().split())
    hits = [
        {"question": question, "answer": answer}
        for question, answer in GENERIC_FAQ.items()
        if words & set(question.lower().rstrip("?").split())
    ]
    return hits[:limit]
