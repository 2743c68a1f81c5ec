from agents.sdk import ToolContext, tool


@tool
async def announce(ctx: ToolContext, channel: str, text: str) -> str:
    """Post a message to a Slack channel through ctx.host.slack."""
    assert ctx.host is not None and ctx.host.slack is not None
    answer = await ctx.host.slack.post_message(channel, text)
    return str(answer["ts"])
