"""``/<slug>/playground``: the web playground of one agent.

The page is a shell: everything it shows comes from the agent's JSON API (with the
visitor's bearer token, the signed-in staff user's session cookie, or nothing on
loopback in dev mode) and from the WebSocket stream. The shell itself reveals
nothing, so it is served for any slug; the API decides what the visitor may see.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.csrf import ensure_csrf_cookie
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.auth import is_loopback_request, principal_for_user
from agent_platform.conf import platform_settings
from agents.api.base import served_agent

# How the page authenticates its API calls.
AUTH_DEV = "dev"  # loopback in dev mode: no credential needed
AUTH_SESSION = "session"  # a signed-in user linked to a principal: the session cookie
AUTH_TOKEN = "token"  # noqa: S105 -- a mode name: anyone else types a bearer token into the page


def playground_auth(request: HttpRequest) -> tuple[str, str]:
    """(auth mode, who the page acts as) for the visitor of a playground page."""
    signed_in = principal_for_user(getattr(request, "user", None))
    if signed_in is not None:
        return AUTH_SESSION, f"{signed_in.tenant.slug}/{signed_in.principal.name}"
    if platform_settings.DEV and is_loopback_request(request):
        return AUTH_DEV, "local developer"
    return AUTH_TOKEN, ""


# Tabs whose routes arrive with later work: each lights up once its URL name exists,
# so the page never calls a route this server does not have.
OPTIONAL_ROUTES = {"evals": "agent-evals", "abs": "agent-abs"}


def _has_route(name: str, agent_slug: str) -> bool:
    try:
        reverse(name, kwargs={"agent_slug": agent_slug})
    except NoReverseMatch:
        return False
    return True


@ensure_csrf_cookie
def playground(request: HttpRequest, agent_slug: str) -> HttpResponse:
    mode, acting_as = playground_auth(request)
    config = {
        "agent": agent_slug,
        "auth": mode,
        "actingAs": acting_as,
        "dev": bool(platform_settings.DEV),
        "routes": {tab: _has_route(name, agent_slug) for tab, name in OPTIONAL_ROUTES.items()},
    }
    return render(request, "playground.html", {"agent_slug": agent_slug, "config": config})


class ToolRenderersView(APIView):
    """``GET /<slug>/playground/renderers``: the agent's ``playground/tools/<tool>.html``
    fragments, by tool name, for the playground to render those tools' calls."""

    schema = None  # a page asset, not part of the public API

    def get(self, request: Request, agent_slug: str) -> Response:
        _, surface = served_agent(request, agent_slug)
        renderers = {name: path.read_text(encoding="utf-8") for name, path in surface.playground_tools.items()}
        return Response({"renderers": renderers})
