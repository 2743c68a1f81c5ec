"""``track_parcel``: where a parcel is, from the carrier's scans."""

from __future__ import annotations

from typing import Any

from agents.sdk import ToolContext, tool

from ..lib.carriers import track


@tool(effect="read")
async def track_parcel(ctx: ToolContext, tracking_number: str) -> dict[str, Any]:
    """Track a parcel: its latest carrier scan and the scan history.

    Args:
        tracking_number: The carrier's tracking number, e.g. "EU123456".
    """
    return track(tracking_number)
