from agents.sdk import ToolContext, tool


@tool(effect="write")
async def remember(ctx: ToolContext, key: str, value: str) -> str:
    """Keep a value in the agent's key-value store."""
    await ctx.host.kv.put(key, value)
    return "kept"
