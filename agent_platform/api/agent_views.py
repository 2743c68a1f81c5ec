"""``GET /api/v1/agents/:slug``: one agent with its health and diagnostics."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.api.serializers import AgentDetailSerializer
from agent_platform.conf import platform_settings
from agents.api.base import served_agent
from agents.config import missing_model_keys
from agents.discovery import AgentSurface
from agents.models import Agent


def agent_detail(agent: Agent, surface: AgentSurface, health_url: str) -> dict[str, Any]:
    """The document of ``GET /api/v1/agents/:slug``: the row, then what discovery found."""
    diagnostics = surface.all_diagnostics()
    missing = missing_model_keys(surface)
    errors = sum(1 for d in diagnostics if d.is_error)
    return {
        "slug": agent.slug,
        "source": agent.source,
        "shared": agent.is_shared,
        "createdAt": agent.created_at,
        "updatedAt": agent.updated_at,
        "ok": errors == 0,
        "model": surface.config.model or platform_settings.DEFAULT_MODEL,
        "description": surface.config.description or "",
        "tools": list(surface.tools),
        "errors": errors,
        "warnings": len(diagnostics) - errors + len(missing),
        "diagnostics": [d.as_dict() for d in diagnostics],
        "missingModelKeys": [{"model": model, "variable": variable} for model, variable in missing.items()],
        "health": health_url,
    }


class AgentDetailView(APIView):
    """``GET /api/v1/agents/:slug``: 200 whether or not the agent's tree has errors
    (``ok`` says which); another tenant's agent is 404 like everywhere."""

    @extend_schema(responses=AgentDetailSerializer)  # describes the document; it is built as a dict
    def get(self, request: Request, agent_slug: str) -> Response:
        agent, surface = served_agent(request, agent_slug, allow_invalid=True)
        health = request.build_absolute_uri(f"/{agent.slug}/v1/health")
        return Response(agent_detail(agent, surface, health))
