import logging
from typing import Any

from agents.sdk import HookContext, define_hook

logger = logging.getLogger("diarist.hooks")


def saw(event: dict[str, Any], ctx: HookContext) -> None:
    """Runs after the memory hook (hooks run in discovery order): once this line is in
    /v1/logs, the memory hook has had the same turn.completed."""
    logger.info("witness: %s turn %s ended", ctx.session.purpose, event["turnId"])


hook = define_hook(events={"turn.completed": saw})
