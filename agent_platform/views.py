"""Pages and probes that belong to the deployment rather than to one agent."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from agents.registry import served_agents


def healthz(request: HttpRequest) -> JsonResponse:
    """``GET /healthz``: the process serves and reaches its database (for probes)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


def index(request: HttpRequest) -> HttpResponse:
    """``/``: the shared agents this deployment serves, with links to each."""
    return render(request, "index.html", {"agents": served_agents(None)})
