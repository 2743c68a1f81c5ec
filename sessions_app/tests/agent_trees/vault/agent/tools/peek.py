import hashlib
import logging

from agents.sdk import ToolContext, tool

logger = logging.getLogger(__name__)


@tool(effect="read")
async def peek(ctx: ToolContext, name: str = "VAULT_TOKEN") -> dict:
    """What the agent sees of one secret: whether it is set and a digest of it, never the value.

    Args:
        name: The secret's name.
    """
    value = ctx.secrets.get(name)
    logger.info("peeking at %s", name)
    return {
        "names": sorted(ctx.secrets),
        "set": value is not None,
        "digest": hashlib.sha256(value.encode()).hexdigest()[:16] if value is not None else None,
    }
