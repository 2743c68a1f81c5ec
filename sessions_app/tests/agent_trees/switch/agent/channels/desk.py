"""``desk``: a route that sends into sessions, and ``events`` handlers that keep a count in
``channel.state``, re-key on ``rekey <key>`` and note each call in the agent's kv, where
``GET /desk/seen`` reads it back (sessions_app/tests/test_channel_delivery.py)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from agents.sdk import ChannelContext, ChannelInfo, ChannelSession, HookContext, Route, define_channel


class SendBody(BaseModel):
    text: str
    key: str | None = None
    mode: Literal["chat", "task"] = "chat"


async def send(ctx: ChannelContext, body: SendBody) -> dict[str, str]:
    return await ctx.send(body.text, key=body.key, mode=body.mode)


async def seen(ctx: ChannelContext) -> dict[str, Any]:
    assert ctx.host is not None and ctx.request is not None
    key = ctx.request.query["key"]
    return {"found": key in await ctx.host.kv.list(key), "value": await ctx.host.kv.get(key)}


def as_dict(info: ChannelInfo | None) -> dict[str, Any] | None:
    return None if info is None else {"id": info.id, "continuationToken": info.continuation_token}


async def note(ctx: HookContext, line: str) -> None:
    assert ctx.host is not None
    key = f"order/{ctx.session.id}"
    await ctx.host.kv.put(key, [*await ctx.host.kv.get(key, []), line])


async def on_message(event: dict[str, Any], channel: ChannelSession, ctx: HookContext) -> None:
    channel.state["messages"] = channel.state.get("messages", 0) + 1
    text = event["data"]["text"]
    if text.startswith("rekey "):
        channel.set_continuation_token(text.removeprefix("rekey "))
    await note(ctx, "channel message.received")


async def on_turn_started(event: dict[str, Any], channel: ChannelSession, ctx: HookContext) -> None:
    await note(ctx, "channel turn.started")
    raise RuntimeError("the desk lamp is broken")  # logged and skipped: the hooks still run


async def on_turn_completed(event: dict[str, Any], channel: ChannelSession, ctx: HookContext) -> None:
    assert ctx.host is not None
    record = {"state": channel.state, "continuationToken": channel.continuation_token, "ctx": as_dict(ctx.channel)}
    await ctx.host.kv.put(f"channel/{ctx.session.id}", record)
    await note(ctx, "channel turn.completed")


channel = define_channel(
    routes=[Route("POST", "/send", handler=send, body=SendBody), Route("GET", "/seen", handler=seen)],
    events={"message.received": on_message, "turn.started": on_turn_started, "turn.completed": on_turn_completed},
)
