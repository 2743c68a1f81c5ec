from typing import Any

from agents.sdk import ToolContext, tool


@tool
def where(ctx: ToolContext) -> dict[str, Any]:
    """Say which channel the call came through, and its continuation token."""
    channel = ctx.channel
    return {"channel": None if channel is None else {"id": channel.id, "continuationToken": channel.continuation_token}}
