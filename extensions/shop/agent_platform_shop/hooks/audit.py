"""``audit``: log every result of the shop's tools, for the shop's own records."""

from __future__ import annotations

import logging
from typing import Any

from agents.sdk import HookContext, define_hook

logger = logging.getLogger("examples.shop_extension.audit")


def log_tool_result(event: dict[str, Any], ctx: HookContext) -> None:
    """One line per ``action.result`` of one of the shop's tools (``<namespace>__*``)."""
    data = event.get("data") or {}
    tool_name = str(data.get("toolName", ""))
    # ctx.extension.namespace is the name the agent mounted the shop under ("shop" in the support example).
    namespace = ctx.extension.namespace if ctx.extension is not None else "shop"
    if tool_name.startswith(f"{namespace}__"):
        logger.info(
            "shop tool agent=%s session=%s tool=%s error=%s region=%s",
            ctx.agent,
            ctx.session.id,
            tool_name,
            data.get("isError", False),
            ctx.extension.config.get("region") if ctx.extension is not None else None,
        )


hook = define_hook(events={"action.result": log_tool_result})
