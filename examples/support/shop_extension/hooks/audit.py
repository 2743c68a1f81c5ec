"""``audit``: log every result of the shop's tools, for the shop's own records."""

from __future__ import annotations

import logging
from typing import Any

from agents.sdk import HookContext, define_hook

logger = logging.getLogger("examples.shop_extension.audit")


def log_tool_result(event: dict[str, Any], ctx: HookContext) -> None:
    """One line per ``action.result`` of a ``shop__`` tool."""
    data = event.get("data") or {}
    tool_name = str(data.get("toolName", ""))
    if tool_name.startswith("shop__"):
        logger.info(
            "shop tool agent=%s session=%s tool=%s error=%s",
            ctx.agent,
            ctx.session.id,
            tool_name,
            data.get("isError", False),
        )


hook = define_hook(events={"action.result": log_tool_result})
