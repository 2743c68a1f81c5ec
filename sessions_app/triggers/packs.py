"""The channel packs' routes (DESIGN §9.2): ``POST /<slug>/v1/channels/<name>/events`` of a
``slack_channel`` and ``.../<name>/webhook`` of a ``github_channel``.

The platform's bearer auth does not apply to them: each pack's handler verifies the
source's own signature on the raw bytes before it parses or records anything. A
handler is called ``handler(PackCall)`` and returns a ``ChannelAnswer``, raising
``ChannelError`` for a refusal (401 ``invalid_signature``, 400 for a bad body).
Sessions it starts belong to the service principal named after the pack
(``triggers.principals``). Which route each pack serves: ``triggers.pack_routes``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agents import sdk
from agents.discovery import AgentSurface
from agents.models import Agent
from sessions_app.authored_channels import ChannelAnswer


@dataclass(frozen=True)
class PackCall:
    """One delivery to a pack route: the agent, the channel as discovered, the request."""

    agent: Agent
    surface: AgentSurface
    channel_name: str
    channel: sdk.Channel
    request: sdk.ChannelRequest


@dataclass(frozen=True)
class PackRoute:
    method: str
    path: str
    handler: Callable[[PackCall], ChannelAnswer]
