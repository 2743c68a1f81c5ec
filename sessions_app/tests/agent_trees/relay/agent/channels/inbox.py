"""``inbox``: a webhook that starts a session, and an ``events`` handler that records, in
the agent's kv, how it was called (sessions_app/tests/test_handler_order.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agents.sdk import ChannelContext, ChannelSession, HookContext, Route, define_channel


class Incoming(BaseModel):
    text: str


async def receive(ctx: ChannelContext, body: Incoming) -> dict[str, str]:
    return await ctx.send(body.text)


async def on_turn_completed(event: dict[str, Any], channel: ChannelSession, ctx: HookContext) -> None:
    assert ctx.host is not None
    await ctx.host.kv.put(
        f"channel/{ctx.session.id}",
        {"type": event["type"], "channel": channel.id, "sessionId": channel.session_id},
    )


channel = define_channel(
    routes=[Route("POST", "/in", handler=receive, body=Incoming)],
    events={"turn.completed": on_turn_completed},
)
