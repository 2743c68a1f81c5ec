"""Which browser origins may call an agent's channel and session routes (CORS).

A page of another origin (a help widget on the shop's own site) may call a channel's
routes when the channel lists its origin (``define_channel(cors_origins=[...])``), or
when the agent is a tenant's own and the tenant lists it (``Tenant.cors_origins``); it
may then also call the agent's session routes (follow, stream, stop what it started),
for the origins of any of the agent's channels. Nothing else is open to other origins.

django-cors-headers answers the preflight and adds the headers; ``cors_allowed`` is its
``check_request_enabled`` signal receiver, so the decision is per request, and its
``CORS_URLS_REGEX`` matches no path, so no other route answers a preflight. No cookie
crosses (``CORS_ALLOW_CREDENTIALS`` stays off): such a page authenticates with a bearer
token like any client, and the platform's auth and the channel's ``auth`` still apply.
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest
from django.urls import Resolver404, resolve

from agents.registry import get_agent, surface_for

CHANNEL_ROUTE = "agent-channel-route"
SESSION_ROUTES = frozenset(
    {
        "session-list",
        "session-create",
        "session-detail",
        "session-stop",
        "session-approval",
        "session-events",
        "session-stream",
    }
)
_DECIDED = "_platform_cors_allowed"


def allowed_origins(agent_slug: str, channel_name: str | None) -> frozenset[str]:
    """The origins that may call ``channel_name``'s routes (None: the agent's session
    routes, open to the origins of every channel of the agent)."""
    agent = get_agent(agent_slug)
    if agent is None:
        return frozenset()
    surface = surface_for(agent)
    if surface.errors:
        return frozenset()
    entries = surface.channels.values() if channel_name is None else [surface.channels.get(channel_name)]
    channels = [entry.value for entry in entries if entry is not None]
    if not channels:
        return frozenset()
    origins = {origin for channel in channels for origin in channel.cors_origins}
    if agent.tenant is not None:
        origins.update(agent.tenant.cors_origins or ())
    return frozenset(origins)


def _decide(request: HttpRequest) -> bool:
    origin = request.headers.get("Origin")
    if not origin or origin == f"{request.scheme}://{request.get_host()}":
        return False  # not a cross-origin request
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return False
    slug = match.kwargs.get("agent_slug")
    if not isinstance(slug, str):
        return False
    if match.url_name == CHANNEL_ROUTE:
        channel: str | None = match.kwargs.get("channel_name")
    elif match.url_name in SESSION_ROUTES:
        channel = None
    else:
        return False
    try:
        origins = allowed_origins(slug, channel)
    except DatabaseError:
        return False  # the view answers the outage itself
    return "*" in origins or origin in origins


def cors_allowed(sender: Any, request: HttpRequest, **kwargs: Any) -> bool:
    """django-cors-headers' ``check_request_enabled``: whether this cross-origin request's
    ``Origin`` may call this route (decided once per request)."""
    decided = getattr(request, _DECIDED, None)
    if decided is None:
        decided = _decide(request)
        setattr(request, _DECIDED, decided)
    return bool(decided)
