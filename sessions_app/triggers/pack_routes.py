"""The route each channel pack serves: ``POST <pack.path>`` (the path the pack function
gives its ``sdk.Pack``, which ``/v1/info`` lists) and the handler of its kind."""

from __future__ import annotations

from collections.abc import Callable

from agents import sdk
from sessions_app.authored_channels import ChannelAnswer
from sessions_app.triggers import github, slack
from sessions_app.triggers.packs import PackCall, PackRoute

PACK_HANDLERS: dict[str, Callable[[PackCall], ChannelAnswer]] = {
    "slack": slack.handle_events,
    "github": github.handle_webhook,
}


def pack_route(channel: sdk.Channel) -> PackRoute | None:
    """The route a pack channel serves; None for an authored channel."""
    pack = channel.pack
    if pack is None or pack.kind not in PACK_HANDLERS:
        return None
    return PackRoute("POST", pack.path, PACK_HANDLERS[pack.kind])
