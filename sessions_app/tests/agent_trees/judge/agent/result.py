from agents.sdk import ResultContext, define_result


async def commit(ctx: ResultContext) -> None:
    """Refuses a final answer that says "break", naming the session's purpose."""
    if "break" in ctx.text:
        raise RuntimeError(f"refused in a {ctx.session.purpose} session")


result = define_result(commit=commit)
