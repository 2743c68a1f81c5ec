"""``labels``: label every incoming report through the host-only ``labels`` MCP server
and keep the labels in the agent's kv under ``labels/<session id>``."""

from __future__ import annotations

from typing import Any

from agents.sdk import HookContext, define_hook


async def label_report(event: dict[str, Any], ctx: HookContext) -> None:
    assert ctx.host is not None and ctx.host.mcp is not None
    text = (event.get("data") or {}).get("text", "")
    suggested = await ctx.host.mcp.call("labels", "suggest", {"text": text})
    await ctx.host.kv.put(f"labels/{ctx.session.id}", suggested["labels"])


hook = define_hook(events={"message.received": label_report})
