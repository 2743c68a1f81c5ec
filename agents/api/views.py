"""Per-agent routes under ``/<slug>/v1/``: health and the discovered surface."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.conf import platform_settings
from agent_platform.errors import ApiError
from agents.api.base import AgentView
from agents.config import local_mcp_connections, mcp_connections
from agents.discovery import AgentSurface
from agents.models import Agent


def info_document(surface: AgentSurface, agent: Agent | None = None) -> dict[str, Any]:
    """``GET /v1/info`` and ``agent info --json``: one document, built in one place
    (``agent``: the served row whose secrets the connections use; the CLI has none, and
    its connections resolve secrets from the environment as a shared agent's do)."""
    _, errors = connection_listing(agent, surface)
    return {**surface.info(default_model=platform_settings.DEFAULT_MODEL), "connectionErrors": errors}


def connection_listing(agent: Agent | None, surface: AgentSurface) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The model-facing MCP tools and the ``connectionErrors`` of connections that cannot
    list (each connection is asked, through the process's pool): never an exception."""
    if not surface.mcp_connections and not surface.host_connections:
        return [], []
    connections = mcp_connections(agent, surface) if agent is not None else local_mcp_connections(surface)
    return async_to_sync(connections.listing)()


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
        return Response(info_document(self.surface, self.agent))


def _all_tools(view: AgentView) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The agent's own tools, then its advertised MCP servers' (``source: "mcp"``)."""
    listed, errors = connection_listing(view.agent, view.surface)
    own = view.surface.info(default_model=platform_settings.DEFAULT_MODEL)["tools"]
    return [*own, *listed], errors


class ToolListView(AgentView):
    """``GET /<slug>/v1/tools``: the tools the model can call, and the MCP connections
    that cannot list theirs (``connectionErrors``)."""

    @extend_schema(
        operation_id="agent_tools_list",
        responses=OpenApiResponse(description="{tools: [...] as in /v1/info, connectionErrors: [...]}."),
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        tools, errors = _all_tools(self)
        return Response({"tools": tools, "connectionErrors": errors})


class ToolDetailView(AgentView):
    """``GET /<slug>/v1/tools/:name``: one tool; an unknown name is 404 with the available names."""

    @extend_schema(
        operation_id="agent_tool_retrieve", responses=OpenApiResponse(description="One tool as in /v1/info.")
    )
    def get(self, request: Request, agent_slug: str, tool_name: str) -> Response:
        tools = {tool["name"]: tool for tool in _all_tools(self)[0]}
        if tool_name not in tools:
            raise ApiError(
                404, "tool_not_found", f"No tool {tool_name!r}. Available: {', '.join(sorted(tools)) or 'none'}."
            )
        return Response(tools[tool_name])
