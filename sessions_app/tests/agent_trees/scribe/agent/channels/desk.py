"""``desk``: a route whose handler logs with its own logger."""

from __future__ import annotations

import logging

from agents.sdk import ChannelContext, Route, define_channel

logger = logging.getLogger("scribe.desk")


def ring(ctx: ChannelContext) -> dict[str, str]:
    logger.warning("the desk bell rang on %s", ctx.channel)
    return {"rang": ctx.channel}


channel = define_channel(routes=[Route("POST", "/ring", handler=ring)])
