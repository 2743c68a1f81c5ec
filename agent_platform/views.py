"""Pages and probes that belong to the deployment rather than to one agent."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from agents.registry import served_agents, surface_for


def healthz(request: HttpRequest) -> JsonResponse:
    """``GET /healthz``: the process serves and reaches its database (for probes)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


def index(request: HttpRequest) -> HttpResponse:
    """``/``: the shared agents of this deployment, each with its diagnostics; an
    agent with errors is listed as not served, with the reasons."""
    rows = [(agent, surface_for(agent)) for agent in served_agents(None)]
    return render(
        request,
        "index.html",
        {"rows": [{"agent": agent, "errors": s.errors, "diagnostics": s.all_diagnostics()} for agent, s in rows]},
    )
