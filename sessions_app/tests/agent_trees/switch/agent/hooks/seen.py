"""``seen``: notes each call after the desk channel's handlers, and ``ctx.channel`` at the
end of each turn, in the agent's kv."""

from __future__ import annotations

from typing import Any

from agents.sdk import HookContext, define_hook


async def on_event(event: dict[str, Any], ctx: HookContext) -> None:
    assert ctx.host is not None
    key = f"order/{ctx.session.id}"
    await ctx.host.kv.put(key, [*await ctx.host.kv.get(key, []), f"hook {event['type']}"])
    if event["type"] == "turn.completed":
        channel = ctx.channel
        seen = None if channel is None else {"id": channel.id, "continuationToken": channel.continuation_token}
        await ctx.host.kv.put(f"hook/{ctx.session.id}", seen)


hook = define_hook(events={"message.received": on_event, "turn.started": on_event, "turn.completed": on_event})
