import logging

from agents.sdk import tool

logger = logging.getLogger(__name__)


@tool
def flag(reason: str) -> str:
    """Flag the conversation for a person to look at.

    Args:
        reason: Why.
    """
    # WARNING: the test worker's console shows warnings and up (agent_platform/tests/test_request_ids.py).
    logger.warning("flagged: %s", reason)
    return "flagged"
