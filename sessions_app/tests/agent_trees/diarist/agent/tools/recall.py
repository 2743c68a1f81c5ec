from agents.sdk import ToolContext, tool


@tool(effect="read")
async def recall(ctx: ToolContext) -> dict:
    """The agent's memory/ files in the caller's tenant, as text."""
    files = ctx.host.files
    paths = await files.list("memory", scope="deployment")
    return {path: (await files.read(path, scope="deployment"))[0].decode() for path in paths}
