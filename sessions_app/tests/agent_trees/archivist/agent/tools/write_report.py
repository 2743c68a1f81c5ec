from agents.sdk import ToolContext, tool


@tool(effect="write")
async def write_report(ctx: ToolContext, title: str, body: str = "", repeat: int = 1, kind: str = "report") -> str:
    """Keep a report (``body`` repeated ``repeat`` times) as an artifact; returns its id."""
    return await ctx.artifacts.tag(
        f"{title}.md", body * repeat, kind=kind, content_type="text/markdown", metadata={"title": title}
    )
