"""``/<slug>/v1/channels/<channel><path>``: the agent's authored channel routes and its packs'.

On an authored channel the platform's auth applies as on every agent route; the logic
is in ``sessions_app.authored_channels``. A pack channel (``slack_channel``,
``github_channel``) is served by ``PackRouteView``: no bearer auth, the pack checks its
source's signature (``sessions_app.triggers.packs``). Left out of the OpenAPI schema: each agent describes its
routes, with their body schemas, in ``GET /<slug>/v1/info`` under ``channels``.
"""

from __future__ import annotations

from typing import Any, cast

from django.http import HttpRequest, HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform import rls
from agent_platform.auth import caller
from agent_platform.conf import platform_settings
from agents.api.base import MAX_SLUG_CHARS, AgentView
from agents.registry import get_agent, surface_for
from sessions_app import authored_channels
from sessions_app.triggers import pack_routes, packs


class ChannelRouteView(AgentView):
    """Any method: the channel's route for it, or 404 (listing the routes) / 405.

    ``ChannelError`` (a ``DomainError``) becomes the envelope in the exception handler,
    with its ``Allow`` header on a 405."""

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, authored_channels.ChannelError) and exc.status == 404 and not exc.allow:
            self.headers.pop("Allow", None)  # no such route: it allows nothing
        return super().handle_exception(exc)

    def _serve(self, request: Request, agent_slug: str, channel_name: str, route_path: str | None = None) -> Response:
        agent, surface = self.agent, self.surface
        principal = caller(request).principal
        method = request.method or "GET"
        channel, route = authored_channels.find_route(surface, agent_slug, channel_name, route_path or "", method)
        self.headers["Allow"] = authored_channels.allowed_methods(channel, route.path)
        http = authored_channels.channel_request(
            method, request.path, dict(request.headers), request.body, request.query_params.dict()
        )
        authored_channels.check_channel_auth(channel_name, channel, http, agent, principal)
        # request.data: 415 for a body that is not JSON, 400 for malformed JSON.
        body = authored_channels.parse_body(route, request.data if route.body is not None else None)
        sender = authored_channels.ChannelSender(
            agent, surface, principal, channel_name, platform_settings.DEFAULT_MODEL
        )
        ctx = authored_channels.channel_context(agent, channel_name, sender, http, principal.tenant_id)
        answer = authored_channels.call_route(route, ctx, body, sender, principal)
        return Response(answer.body, status=answer.status)

    @extend_schema(exclude=True)
    def get(self, request: Request, agent_slug: str, channel_name: str, route_path: str | None = None) -> Response:
        return self._serve(request, agent_slug, channel_name, route_path)

    @extend_schema(exclude=True)
    def post(self, request: Request, agent_slug: str, channel_name: str, route_path: str | None = None) -> Response:
        return self._serve(request, agent_slug, channel_name, route_path)

    @extend_schema(exclude=True)
    def put(self, request: Request, agent_slug: str, channel_name: str, route_path: str | None = None) -> Response:
        return self._serve(request, agent_slug, channel_name, route_path)

    @extend_schema(exclude=True)
    def patch(self, request: Request, agent_slug: str, channel_name: str, route_path: str | None = None) -> Response:
        return self._serve(request, agent_slug, channel_name, route_path)

    @extend_schema(exclude=True)
    def delete(self, request: Request, agent_slug: str, channel_name: str, route_path: str | None = None) -> Response:
        return self._serve(request, agent_slug, channel_name, route_path)

    # HEAD and OPTIONS cannot be authored: 405 on a known path, not GET's handler or
    # DRF's metadata.
    @extend_schema(exclude=True)
    def head(self, request: Request, agent_slug: str, channel_name: str, route_path: str | None = None) -> Response:
        return self._serve(request, agent_slug, channel_name, route_path)

    @extend_schema(exclude=True)
    def options(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Response:
        # DRF hands every method the same Request; the stubs type View.options's as Django's.
        return self._serve(
            cast(Request, request), kwargs["agent_slug"], kwargs["channel_name"], kwargs.get("route_path")
        )


class PackRouteView(APIView):
    """A pack's route: POST only; the pack's handler verifies the signature on the raw
    body before anything is parsed or recorded (DESIGN §9.2)."""

    authentication_classes = ()
    permission_classes = (AllowAny,)

    @extend_schema(exclude=True)
    def post(self, request: Request, agent_slug: str, channel_name: str, route_path: str | None = None) -> Response:
        call = _pack_call(agent_slug, channel_name)
        if call is None:
            raise authored_channels.ChannelError(404, "channel_not_found", f"No channel {channel_name!r}.")
        agent, surface, channel, route = call
        if (route_path or "") != route.path:
            raise authored_channels.ChannelError(
                404, "route_not_found", f"Channel {channel_name!r} serves only POST {route.path}."
            )
        http = authored_channels.channel_request(
            "POST", request.path, dict(request.headers), request.body, request.query_params.dict()
        )
        # No caller's token here: the pack verifies the delivery and finds the service
        # principal of the agent's tenant itself, so it runs in the platform's scope
        # (agent_platform.rls), as the other triggers (schedules, reminders) do.
        with rls.platform_scope():
            answer = route.handler(packs.PackCall(agent, surface, channel_name, channel, http))
        return Response(answer.body, status=answer.status)


def _pack_call(agent_slug: str, channel_name: str) -> tuple[Any, Any, Any, packs.PackRoute] | None:
    """The agent, surface, channel and pack route the URL names, or None when it names no pack."""
    if len(agent_slug) > MAX_SLUG_CHARS or "\x00" in agent_slug:
        return None
    agent = get_agent(agent_slug)
    if agent is None:
        return None
    surface = surface_for(agent)
    entry = surface.channels.get(channel_name)
    if surface.errors or entry is None:
        return None
    route = pack_routes.pack_route(entry.value)
    return None if route is None else (agent, surface, entry.value, route)


_authored = ChannelRouteView.as_view()
_pack = PackRouteView.as_view()


# Exempt here as DRF's views are: the view it hands to does its own CSRF check where a
# cookie session authenticates; Slack's or GitHub's POST carries no CSRF cookie.
@csrf_exempt
def channel_route(
    request: HttpRequest, agent_slug: str, channel_name: str, route_path: str | None = None
) -> HttpResponseBase:
    """Route ``/<slug>/v1/channels/<name>...`` to the pack's view when the channel is a pack."""
    if _pack_call(agent_slug, channel_name) is not None:
        return _pack(request, agent_slug=agent_slug, channel_name=channel_name, route_path=route_path)
    return _authored(request, agent_slug=agent_slug, channel_name=channel_name, route_path=route_path)
