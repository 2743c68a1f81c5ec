"""``set_severity``: label an issue's severity; raising it to critical needs approval."""

from __future__ import annotations

from typing import Any

from agents.sdk import ToolContext, tool

from ..lib.issues import Severity


# Only "critical" pages people, so only that call waits for a person's approval.
@tool(effect="write", needs_approval=lambda args: args.get("severity") == "critical")
async def set_severity(
    ctx: ToolContext, number: int, severity: Severity, component: str | None = None
) -> dict[str, Any]:
    """Set an issue's severity label and, optionally, its component label.

    Setting "critical" pages the on-call engineer, so it waits for a person's approval.

    Args:
        number: The issue number.
        severity: One of "low", "medium", "high", "critical".
        component: The component label, e.g. "auth" or "export".
    """
    labels = [f"severity:{severity}"] + ([f"component:{component}"] if component else [])
    return {"number": number, "labels": labels}
