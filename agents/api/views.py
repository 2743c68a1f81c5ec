"""Per-agent routes under ``/<slug>/v1/``: health and the discovered surface."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.auth import optional_caller
from agent_platform.conf import platform_settings
from agent_platform.errors import ApiError
from agents.discovery import AgentSurface
from agents.models import Agent
from agents.registry import get_visible_agent, served_row, surface_for, visible_to

MAX_DIAGNOSTICS_IN_MESSAGE = 3


def served_agent(
    request: Request, slug: str, *, allow_invalid: bool = False, row: Agent | None = None
) -> tuple[Agent, AgentSurface]:
    """The agent of the URL and its surface. ``row``: the agent's row if the caller has
    read it already (with a session, say); else it is looked up.

    Raises:
        ApiError: 404 ``agent_not_found`` when there is no such agent or it belongs
            to another tenant; 503 ``agent_invalid`` when its tree has errors
            (unless ``allow_invalid``).
    """
    user = optional_caller(request)
    tenant = user.tenant if user is not None else None
    agent = get_visible_agent(slug, tenant) if row is None else visible_to(served_row(slug, row), tenant)
    if agent is None:
        raise ApiError(404, "agent_not_found", f"No agent is served at /{slug}/.")
    surface = surface_for(agent)
    if surface.errors and not allow_invalid:
        shown = "; ".join(str(d) for d in surface.errors[:MAX_DIAGNOSTICS_IN_MESSAGE])
        raise ApiError(503, "agent_invalid", f"Agent {slug!r} is not served: {shown}")
    return agent, surface


def info_document(surface: AgentSurface) -> dict[str, Any]:
    """``GET /v1/info`` and ``agent info --json``: one document, built in one place."""
    return surface.info(default_model=platform_settings.DEFAULT_MODEL)


class HealthView(APIView):
    """``GET /<slug>/v1/health``: 200 while the agent is served, 503 with its
    diagnostics when its tree has errors. No token needed for shared agents."""

    permission_classes = [AllowAny]

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
        agent, surface = served_agent(request, agent_slug, allow_invalid=True)
        body = {
            "ok": not surface.errors,
            "agent": agent.slug,
            "source": agent.source,
            "diagnostics": [d.as_dict() for d in surface.all_diagnostics()],
        }
        return Response(body, status=503 if surface.errors else 200)


class InfoView(APIView):
    """``GET /<slug>/v1/info``: the discovered surface, diagnostics included (even
    when they keep the agent from being served)."""

    @extend_schema(responses=OpenApiResponse(description="The agent's surface (see docs/http.md)."))
    def get(self, request: Request, agent_slug: str) -> Response:
        _, surface = served_agent(request, agent_slug, allow_invalid=True)
        return Response(info_document(surface))


class ToolListView(APIView):
    """``GET /<slug>/v1/tools``: the tools the model can call."""

    @extend_schema(
        operation_id="agent_tools_list", responses=OpenApiResponse(description="{tools: [...]} as in /v1/info.")
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        _, surface = served_agent(request, agent_slug)
        return Response({"tools": info_document(surface)["tools"]})


class ToolDetailView(APIView):
    """``GET /<slug>/v1/tools/:name``: one tool; an unknown name is 404 with the available names."""

    @extend_schema(
        operation_id="agent_tool_retrieve", responses=OpenApiResponse(description="One tool as in /v1/info.")
    )
    def get(self, request: Request, agent_slug: str, tool_name: str) -> Response:
        _, surface = served_agent(request, agent_slug)
        tools = {tool["name"]: tool for tool in info_document(surface)["tools"]}
        if tool_name not in tools:
            raise ApiError(
                404, "tool_not_found", f"No tool {tool_name!r}. Available: {', '.join(sorted(tools)) or 'none'}."
            )
        return Response(tools[tool_name])
