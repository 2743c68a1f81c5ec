from agents.sdk import ToolContext, tool


@tool
async def recall(ctx: ToolContext, key: str) -> str:
    """Read a value from the agent's key-value store."""
    return await ctx.host.kv.get(key, "nothing")
