from agents.sdk import ToolContext, tool


@tool(timeout=60)
def wait(ctx: ToolContext, seconds: float) -> str:
    """Wait, stopping early when the turn is stopped."""
    stopped = ctx.signal.wait(seconds)
    return "stopped" if stopped else "waited"
