"""``ops``: routes for the channel-route tests (sessions_app/tests/test_channel_routes.py)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.sdk import ChannelContext, Route, SessionRefused, define_channel


class SendBody(BaseModel):
    text: str = Field(min_length=1)
    key: str | None = None
    mode: Literal["chat", "task"] = "chat"
    admission: Literal["preempt", "coalesce", "enqueue", "reject"] = "preempt"


class Pong(BaseModel):
    agent: str
    channel: str
    query: dict[str, str]
    headers: list[str]


async def send(ctx: ChannelContext, body: SendBody) -> dict[str, Any]:
    return await ctx.send(body.text, key=body.key, mode=body.mode, admission=body.admission, title="from ops")


async def send_and_say(ctx: ChannelContext, body: SendBody) -> dict[str, Any]:
    """Catches a refused send and answers with its own value."""
    try:
        sent = await ctx.send(body.text, key=body.key, admission=body.admission)
    except SessionRefused as refused:
        return {"refused": refused.code}
    return {"sent": sent["sessionId"]}


def ping(ctx: ChannelContext) -> Pong:
    assert ctx.request is not None
    return Pong(agent=ctx.agent, channel=ctx.channel, query=ctx.request.query, headers=sorted(ctx.request.headers))


async def remember(ctx: ChannelContext) -> dict[str, Any]:
    assert ctx.host is not None
    await ctx.host.kv.put("ops", "seen")
    return {"kv": await ctx.host.kv.get("ops")}


def boom(ctx: ChannelContext) -> None:
    raise RuntimeError("the ticket system is down")


async def send_then_boom(ctx: ChannelContext, body: SendBody) -> None:
    await ctx.send(body.text)
    raise RuntimeError("after sending")


def quiet(ctx: ChannelContext) -> None:
    return None


def not_json(ctx: ChannelContext) -> object:
    return object()


channel = define_channel(
    routes=[
        Route("POST", "/send", handler=send, body=SendBody, description="Send a message into a session."),
        Route("POST", "/send-and-say", handler=send_and_say, body=SendBody),
        Route("GET", "/ping", handler=ping, description="Who answers."),
        Route("DELETE", "/ping", handler=quiet),
        Route("POST", "/remember", handler=remember),
        Route("POST", "/boom", handler=boom),
        Route("POST", "/send-then-boom", handler=send_then_boom, body=SendBody),
        Route("POST", "/quiet", handler=quiet),
        Route("GET", "/not-json", handler=not_json),
    ]
)
