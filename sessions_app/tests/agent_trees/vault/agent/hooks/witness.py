"""``witness``: logs which secrets a hook sees at each completed turn (names, never values)."""

import logging

from agents.sdk import HookContext, define_hook

logger = logging.getLogger("vault.witness")


def witness(event: dict, ctx: HookContext) -> None:
    logger.info("hook sees %s", ",".join(sorted(ctx.secrets)) or "nothing")


hook = define_hook(events={"turn.completed": witness})
