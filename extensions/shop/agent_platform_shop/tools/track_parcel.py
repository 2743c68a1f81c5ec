"""``track_parcel``: where a parcel is, from the scans of the carrier of the mount's region."""

from __future__ import annotations

from typing import Any

from agents.sdk import ToolContext, tool

from ..lib.carriers import track


@tool(effect="read")
async def track_parcel(ctx: ToolContext, tracking_number: str) -> dict[str, Any]:
    """Track a parcel: its carrier, its latest scan and the scan history.

    Args:
        tracking_number: The carrier's tracking number, e.g. "EU123456".
    """
    # The mount's validated config: mount("shop", config={"region": "eu", ...}).
    config = ctx.extension.config if ctx.extension is not None else {"region": "eu"}
    return {**track(tracking_number, config["region"]), "region": config["region"]}
