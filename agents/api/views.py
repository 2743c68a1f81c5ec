"""Per-agent operational routes under ``/<slug>/v1/``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.auth import optional_caller
from agent_platform.errors import ApiError
from agents.models import Agent
from agents.registry import get_visible_agent


def visible_agent_or_404(request: Request, slug: str) -> Agent:
    """The agent of the URL, or 404 when it does not exist or belongs to another tenant.

    Raises:
        ApiError: 404 ``agent_not_found``.
    """
    user = optional_caller(request)
    agent = get_visible_agent(slug, user.tenant if user is not None else None)
    if agent is None:
        raise ApiError(404, "agent_not_found", f"No agent is served at /{slug}/.")
    return agent


class HealthView(APIView):
    """``GET /<slug>/v1/health``: 200 while the agent is served. No token needed
    for shared agents; a tenant's own agent answers only to that tenant."""

    permission_classes = [AllowAny]

    @extend_schema(
        responses=inline_serializer(
            "Health",
            {"ok": serializers.BooleanField(), "agent": serializers.CharField(), "source": serializers.CharField()},
        ),
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        agent = visible_agent_or_404(request, agent_slug)
        return Response({"ok": True, "agent": agent.slug, "source": agent.source})
