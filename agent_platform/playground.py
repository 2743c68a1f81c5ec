"""``/<slug>/playground``: the web playground of one agent.

The page is a shell: everything it shows comes from the agent's JSON API (with the
visitor's bearer token, the signed-in staff user's session cookie, or nothing on
loopback in dev mode) and from the WebSocket stream; the API decides what the visitor
may see. The shell of an agent nobody serves is a 404 page, and so is that of an agent
a visitor we know (signed in, or the local developer) may not see; a visitor who is
to type a token gets the shell of any agent that exists, since the token decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.csrf import ensure_csrf_cookie
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform import rls
from agent_platform.auth import get_dev_principal, is_loopback_request, principal_for_user
from agent_platform.conf import platform_settings
from agent_platform.models import Tenant
from agent_platform.renderers import sanitize_renderer
from agents.api.base import served_agent
from agents.models import Agent
from agents.registry import get_agent, is_valid_slug, visible_to

# How the page authenticates its API calls.
AUTH_DEV = "dev"  # loopback in dev mode: no credential needed
AUTH_SESSION = "session"  # a signed-in user linked to a principal: the session cookie
AUTH_TOKEN = "token"  # noqa: S105 -- a mode name: anyone else types a bearer token into the page


@dataclass(frozen=True)
class Visitor:
    """Who opens a playground page: how the page authenticates, who it acts as, and
    the tenant whose agents they may see (None: not known until they type a token)."""

    auth: str
    acting_as: str = ""
    tenant: Tenant | None = None


def playground_visitor(request: HttpRequest) -> Visitor:
    signed_in = principal_for_user(getattr(request, "user", None))
    if signed_in is not None:
        rls.enter_tenant(signed_in.tenant.pk)
        return Visitor(AUTH_SESSION, f"{signed_in.tenant.slug}/{signed_in.principal.name}", signed_in.tenant)
    if platform_settings.DEV and is_loopback_request(request):
        rls.enter_platform()  # the local developer operates the whole local platform
        return Visitor(AUTH_DEV, "local developer", get_dev_principal().tenant)
    return Visitor(AUTH_TOKEN)


def playground_agent(slug: str, visitor: Visitor) -> Agent | None:
    """The agent whose playground ``/<slug>/playground`` is for ``visitor``, or None."""
    agent = get_agent(slug) if is_valid_slug(slug) else None
    if agent is None or visitor.auth == AUTH_TOKEN:
        return agent
    return visible_to(agent, visitor.tenant)


# Tabs whose routes arrive with later work: each lights up once its URL name exists,
# so the page never calls a route this server does not have.
OPTIONAL_ROUTES = {"evals": "dev-eval-list", "abs": "agent-abs"}


def _has_route(name: str, agent_slug: str) -> bool:
    try:
        reverse(name, kwargs={"agent_slug": agent_slug})
    except NoReverseMatch:
        return False
    return True


@ensure_csrf_cookie
def playground(request: HttpRequest, agent_slug: str) -> HttpResponse:
    visitor = playground_visitor(request)
    if playground_agent(agent_slug, visitor) is None:
        message = f"No agent is served at /{agent_slug}/."
        return render(request, "404.html", {"message": message}, status=404)
    config = {
        "agent": agent_slug,
        "auth": visitor.auth,
        "actingAs": visitor.acting_as,
        "dev": bool(platform_settings.DEV),
        "routes": {tab: _has_route(name, agent_slug) for tab, name in OPTIONAL_ROUTES.items()},
    }
    return render(request, "playground.html", {"agent_slug": agent_slug, "config": config})


class ToolRenderersView(APIView):
    """``GET /<slug>/playground/renderers``: the agent's ``playground/tools/<tool>.html``
    fragments, by tool name, for the playground to render those tools' calls; each cut
    down to the allow-list of ``agent_platform.renderers`` (no script can come with it)."""

    schema = None  # a page asset, not part of the public API

    def get(self, request: Request, agent_slug: str) -> Response:
        _, surface = served_agent(request, agent_slug)
        renderers = {
            name: sanitize_renderer(path.read_text(encoding="utf-8")) for name, path in surface.playground_tools.items()
        }
        return Response({"renderers": renderers})
