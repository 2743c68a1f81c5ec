from agents.sdk import ToolContext, tool


@tool(effect="read")
def arms(ctx: ToolContext) -> dict:
    """The A/B arms of this session."""
    return dict(ctx.session.abs)
