"""The route each channel pack serves (``sdk.Pack.kind`` → method, path, handler)."""

from __future__ import annotations

from agents import sdk
from sessions_app.triggers import github, slack
from sessions_app.triggers.packs import PackRoute

PACK_ROUTES = {
    "slack": PackRoute("POST", "/events", slack.handle_events),
    "github": PackRoute("POST", "/webhook", github.handle_webhook),
}


def pack_route(channel: sdk.Channel) -> PackRoute | None:
    """The route a pack channel serves; None for an authored channel."""
    if channel.pack is None:
        return None
    return PACK_ROUTES.get(channel.pack.kind)
