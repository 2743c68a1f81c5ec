from agents.sdk import ToolContext, tool


@tool
def version(ctx: ToolContext) -> str:
    """Which revision of the agent answers."""
    return "v1"
