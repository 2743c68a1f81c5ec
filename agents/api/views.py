"""Per-agent routes under ``/<slug>/v1/``: health and the discovered surface."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.conf import platform_settings
from agent_platform.errors import ApiError
from agents.api.base import AgentView
from agents.discovery import AgentSurface


def info_document(surface: AgentSurface) -> dict[str, Any]:
    """``GET /v1/info`` and ``agent info --json``: one document, built in one place."""
    return surface.info(default_model=platform_settings.DEFAULT_MODEL)


class HealthView(AgentView):
    """``GET /<slug>/v1/health``: 200 while the agent is served, 503 with its
    diagnostics when its tree has errors. No token needed for shared agents."""

    permission_classes = [AllowAny]
    allow_invalid_agent = True

    @extend_schema(
        responses={
            200: inline_serializer(
                "Health",
                {
                    "ok": serializers.BooleanField(),
                    "agent": serializers.CharField(),
                    "source": serializers.CharField(),
                    "diagnostics": serializers.ListField(child=serializers.DictField()),
                },
            ),
            503: OpenApiResponse(description="The agent's tree has errors; the body lists them."),
        },
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        agent, surface = self.agent, self.surface
        body = {
            "ok": not surface.errors,
            "agent": agent.slug,
            "source": agent.source,
            "diagnostics": [d.as_dict() for d in surface.all_diagnostics()],
        }
        return Response(body, status=503 if surface.errors else 200)


class InfoView(AgentView):
    """``GET /<slug>/v1/info``: the discovered surface, diagnostics included (even
    when they keep the agent from being served)."""

    allow_invalid_agent = True

    @extend_schema(responses=OpenApiResponse(description="The agent's surface (see docs/http.md)."))
    def get(self, request: Request, agent_slug: str) -> Response:
        return Response(info_document(self.surface))


class ToolListView(AgentView):
    """``GET /<slug>/v1/tools``: the tools the model can call."""

    @extend_schema(
        operation_id="agent_tools_list", responses=OpenApiResponse(description="{tools: [...]} as in /v1/info.")
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        return Response({"tools": info_document(self.surface)["tools"]})


class ToolDetailView(AgentView):
    """``GET /<slug>/v1/tools/:name``: one tool; an unknown name is 404 with the available names."""

    @extend_schema(
        operation_id="agent_tool_retrieve", responses=OpenApiResponse(description="One tool as in /v1/info.")
    )
    def get(self, request: Request, agent_slug: str, tool_name: str) -> Response:
        tools = {tool["name"]: tool for tool in info_document(self.surface)["tools"]}
        if tool_name not in tools:
            raise ApiError(
                404, "tool_not_found", f"No tool {tool_name!r}. Available: {', '.join(sorted(tools)) or 'none'}."
            )
        return Response(tools[tool_name])
