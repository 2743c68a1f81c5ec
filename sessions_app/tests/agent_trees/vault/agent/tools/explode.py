import logging

from agents.sdk import ToolContext, tool

logger = logging.getLogger(__name__)


@tool(effect="read")
def explode(ctx: ToolContext) -> dict:
    """Use the token, then fail the way a refused call does (a plain tool, run in a thread)."""
    token = ctx.secrets["VAULT_TOKEN"]
    logger.warning("the vault refused a token of %d characters", len(token))
    raise RuntimeError("the vault refused the token")
