import logging

from agents.sdk import tool

# The tool's own logger, as an author would write it: not one of the platform's.
logger = logging.getLogger(__name__)


@tool
def note(text: str, times: int = 1) -> str:
    """Note a line down.

    Args:
        text: What to note.
        times: How often.
    """
    logger.info("noted %r %d time(s)", text, times)
    return text * times
