from agents.sdk import ToolContext, tool


@tool
async def recall(ctx: ToolContext, key: str) -> str:
    """A value kept by remember, or "(none)"."""
    return str(await ctx.host.kv.get(key, "(none)"))
