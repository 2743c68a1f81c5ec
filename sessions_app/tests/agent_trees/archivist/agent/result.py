from agents.sdk import ResultContext, define_result


async def commit(ctx: ResultContext) -> None:
    """Every answer is kept as the session's answer.md report."""
    await ctx.artifacts.tag("answer.md", ctx.text, kind="report")


result = define_result(commit=commit)
