"""``desk``: a channel route that reports which secrets its handler sees (names only)."""

from agents.sdk import ChannelContext, Route, define_channel


def names(ctx: ChannelContext) -> dict:
    return {"names": sorted(ctx.secrets)}


channel = define_channel(routes=[Route("GET", "/names", handler=names)])
