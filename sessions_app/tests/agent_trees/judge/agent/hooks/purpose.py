import logging
from typing import Any

from agents.sdk import HookContext, define_hook

logger = logging.getLogger("judge.hooks")


def note_purpose(event: dict[str, Any], ctx: HookContext) -> None:
    """Logs the purpose of each finished turn's session (eval runs fire hooks too)."""
    logger.info("hook saw a turn.completed in a %s session", ctx.session.purpose)


hook = define_hook(events={"turn.completed": note_purpose})
