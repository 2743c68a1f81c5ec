"""``GET /api/v1/agents/:slug``: one agent with its health and diagnostics."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.api.serializers import AgentDetailSerializer
from agent_platform.auth import optional_caller
from agent_platform.conf import platform_settings
from agents.api.base import AgentNotFound, served_agent
from agents.config import missing_model_keys
from agents.discovery import AgentSurface, Diagnostic
from agents.discovery import diagnostics as codes
from agents.models import Agent, AgentSource


def agent_detail(agent: Agent, surface: AgentSurface, health_url: str) -> dict[str, Any]:
    """The document of ``GET /api/v1/agents/:slug``: the row, then what discovery found."""
    diagnostics = surface.all_diagnostics()
    missing = missing_model_keys(surface)
    errors = sum(1 for d in diagnostics if d.is_error)
    return {
        **_row(agent),
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


def undeployed_detail(agent: Agent, health_url: str) -> dict[str, Any]:
    """The document for a deployed agent with no active revision yet (made by ``POST
    /api/v1/agents``, nothing uploaded or activated): not served, and saying why."""
    problem = Diagnostic(
        codes.NOT_DEPLOYED, "", f"Agent {agent.slug!r} has no active deployment; it is not served until one is."
    )
    return {
        **_row(agent),
        "ok": False,
        "model": None,
        "description": "",
        "tools": [],
        "errors": 1,
        "warnings": 0,
        "diagnostics": [problem.as_dict()],
        "missingModelKeys": [],
        "health": health_url,
    }


def _row(agent: Agent) -> dict[str, Any]:
    return {
        "slug": agent.slug,
        "source": agent.source,
        "shared": agent.is_shared,
        "createdAt": agent.created_at,
        "updatedAt": agent.updated_at,
    }


class AgentDetailView(APIView):
    """``GET /api/v1/agents/:slug``: 200 whether or not the agent's tree has errors
    (``ok`` says which), and for the tenant's own agent that has no active deployment
    yet; another tenant's agent is 404 like everywhere."""

    @extend_schema(responses=AgentDetailSerializer)  # describes the document; it is built as a dict
    def get(self, request: Request, agent_slug: str) -> Response:
        health = request.build_absolute_uri(f"/{agent_slug}/v1/health")
        try:
            agent, surface = served_agent(request, agent_slug, allow_invalid=True)
        except AgentNotFound:
            user = optional_caller(request)
            waiting = (
                Agent.objects.filter(
                    slug=agent_slug, tenant=user.tenant, source=AgentSource.DEPLOYMENT, active_revision__isnull=True
                ).first()
                if user is not None
                else None
            )
            if waiting is None:
                raise
            return Response(undeployed_detail(waiting, health))
        return Response(agent_detail(agent, surface, health))
