"""``audit/usage``: log the model usage of every completed turn."""

from __future__ import annotations

import logging
from typing import Any

from agents.sdk import HookContext, define_hook

logger = logging.getLogger("examples.weather.usage")


def log_usage(event: dict[str, Any], ctx: HookContext) -> None:
    """One log line per finished turn; ``turn.completed`` carries ``{result?, usage?, cost?}``."""
    data = event.get("data") or {}
    logger.info(
        "turn completed agent=%s session=%s turn=%s usage=%s cost=%s",
        ctx.agent,
        ctx.session.id,
        event.get("turnId"),
        data.get("usage", {}),
        data.get("cost"),
    )


hook = define_hook(events={"turn.completed": log_usage})
