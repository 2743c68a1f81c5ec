"""``find_duplicates``: known issues that look like the one being triaged."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from pydantic import Field

from agents.sdk import ToolContext, tool

from ..lib.issues import similar


@tool(effect="read")
async def find_duplicates(
    ctx: ToolContext, summary: str, limit: Annotated[int, Field(ge=1, le=10)] = 3
) -> list[dict[str, Any]]:
    """Search known issues for likely duplicates of a report, best match first.

    An empty list means nothing similar is known.

    Args:
        summary: The issue's title or a one-line summary of it.
        limit: Maximum number of candidates to return.
    """
    return [asdict(issue) | {"score": score} for issue, score in similar(summary, limit=limit)]
