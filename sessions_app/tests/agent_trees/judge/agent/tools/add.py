from agents.sdk import ToolContext, tool


@tool
async def add(ctx: ToolContext, a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
