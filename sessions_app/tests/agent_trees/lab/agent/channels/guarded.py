"""``guarded``: a channel with its own ``auth`` (a shared-secret header)."""

from __future__ import annotations

from agents.sdk import ChannelContext, ChannelRequest, Route, define_channel


async def auth(request: ChannelRequest) -> bool:
    return request.headers.get("x-ops-secret") == "s3cret" and request.method == "POST" and b"ok" in request.body


def hello(ctx: ChannelContext) -> dict[str, str]:
    return {"hello": ctx.channel}


channel = define_channel(routes=[Route("POST", "/hello", handler=hello)], auth=auth)
