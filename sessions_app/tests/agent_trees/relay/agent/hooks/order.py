"""``order``: records, in the agent's kv, the event and context a hook is called with."""

from __future__ import annotations

from typing import Any

from agents.sdk import HookContext, define_hook


async def on_turn_completed(event: dict[str, Any], ctx: HookContext) -> None:
    assert ctx.host is not None
    await ctx.host.kv.put(f"hook/{ctx.session.id}", {"type": event["type"], "agent": ctx.agent})


hook = define_hook(events={"turn.completed": on_turn_completed})
