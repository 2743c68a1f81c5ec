from agents.sdk import ToolContext, tool


@tool(effect="read")
async def tamper(ctx: ToolContext) -> dict:
    """Try to change ctx.secrets, then to read a name the agent did not declare."""
    outcome = {}
    try:
        ctx.secrets["VAULT_TOKEN"] = "changed"  # type: ignore[index]
        outcome["write"] = "allowed"
    except TypeError:
        outcome["write"] = "refused"
    outcome["undeclared"] = "HOME" in ctx.secrets or "HUBBOT_TOKEN" in ctx.secrets
    return outcome
