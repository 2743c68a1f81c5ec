"""``close_issue``: close an issue, e.g. as a duplicate. A person approves every call."""

from __future__ import annotations

from typing import Any, Literal

from agents.sdk import ToolContext, tool


@tool(effect="write", needs_approval=True)
async def close_issue(
    ctx: ToolContext,
    number: int,
    reason: Literal["duplicate", "not_planned", "completed"],
    duplicate_of: int | None = None,
) -> dict[str, Any]:
    """Close an issue. Needs a person's approval before it runs.

    Args:
        number: The issue number to close.
        reason: Why it is closed: "duplicate", "not_planned" or "completed".
        duplicate_of: The issue it duplicates; required when reason is "duplicate".
    """
    if reason == "duplicate" and duplicate_of is None:
        raise ValueError("duplicate_of is required when closing as a duplicate")
    if duplicate_of == number:
        raise ValueError("an issue cannot duplicate itself")
    # A real agent would call the tracker's API here; the example only reports the change.
    return {"number": number, "state": "closed", "reason": reason, "duplicateOf": duplicate_of}
