"""``/<slug>/v1/channels/<channel><path>``: the agent's authored channel routes.

The platform's auth applies as on every agent route; the logic is in
``sessions_app.authored_channels``. Left out of the OpenAPI schema: each agent describes its
routes, with their body schemas, in ``GET /<slug>/v1/info`` under ``channels``.
"""

from __future__ import annotations

from typing import Any, cast

from django.http import HttpRequest
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import caller
from agent_platform.conf import platform_settings
from agents.api.base import AgentView
from sessions_app import authored_channels


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
