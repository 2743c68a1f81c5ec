"""Pages and probes that belong to the deployment rather than to one agent."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from agent_platform import readiness, rls
from agent_platform.admin import staff_tenant
from agent_platform.auth import get_dev_principal, is_loopback_request
from agent_platform.conf import platform_settings
from agent_platform.dashboard import PERIODS, build_dashboard, charts_for
from agent_platform.errors import error_body
from agent_platform.models import Tenant
from agents.discovery import AgentSurface
from agents.discovery.extensions import ENTRY_POINT_GROUP, InstalledExtension, installed_extensions
from agents.models import Agent
from agents.registry import served_agents, surface_for


def healthz(request: HttpRequest) -> JsonResponse:
    """``GET /healthz``: the process serves and reaches its database (for probes)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


def readyz(request: HttpRequest) -> JsonResponse:
    """``GET /readyz[?without=workers]``: the database, the broker, the channel layer and a
    worker answer (for readiness probes; ``agent_platform.readiness``). 200
    ``{"status": "ok", "checks": {...}}``, or 503 naming what failed."""
    skipped = {name.strip() for value in request.GET.getlist("without") for name in value.split(",") if name.strip()}
    unknown = skipped - set(readiness.CHECKS)
    if unknown:
        message = f"without names unknown checks {sorted(unknown)!r}; known: {', '.join(readiness.CHECKS)}."
        return JsonResponse(error_body("invalid", message), status=400)
    results = readiness.check(name for name in readiness.CHECKS if name not in skipped)
    if readiness.ready(results):
        return JsonResponse({"status": "ok", "checks": results})
    failed = [name for name, result in results.items() if result not in readiness.PASSING]
    body = {**error_body("not_ready", f"Not ready: {', '.join(failed)}."), "status": "unavailable", "checks": results}
    return JsonResponse(body, status=503)


def index(request: HttpRequest) -> HttpResponse:
    """``/``: the shared agents of this deployment, each with its diagnostics and its
    mounted extensions (an agent with errors is listed as not served, with the
    reasons), then the installed extension packages and the agents that mount each."""
    rows = [(agent, surface_for(agent)) for agent in served_agents(None)]
    packages = [{"package": item, "mounted_by": _mounted_by(item, rows)} for item in installed_extensions()]
    return render(
        request,
        "index.html",
        {
            "rows": [
                {
                    "agent": agent,
                    "errors": s.errors,
                    "diagnostics": s.all_diagnostics(),
                    "extensions": list(s.extensions.values()),
                }
                for agent, s in rows
            ],
            "packages": packages,
        },
    )


def _mounted_by(package: InstalledExtension, rows: list[tuple[Agent, AgentSurface]]) -> list[str]:
    """``slug/namespace`` of each listed agent's mount of ``package``."""
    return [
        f"{agent.slug}/{mount.namespace}"
        for agent, surface in rows
        for mount in surface.extensions.values()
        if mount.package is not None and mount.package["name"] == package.distribution
    ]


def extensions_admin(request: HttpRequest) -> HttpResponse:
    """``/admin/extensions/`` (staff): the installed extension packages, read-only.
    Packages belong to the deployment's Python environment, not to a tenant, so every
    staff user sees the same list; there is no model behind it."""
    context = {
        **admin.site.each_context(request),
        "title": "Installed extension packages",
        "packages": installed_extensions(),
        "group": ENTRY_POINT_GROUP,
    }
    return render(request, "admin/extensions.html", context)


@dataclass(frozen=True)
class DashboardViewer:
    """Whose data a dashboard request may see: one tenant, or every tenant (None)."""

    tenant: Tenant | None
    chooses_tenant: bool = False


def dashboard_viewer(request: HttpRequest) -> DashboardViewer | None:
    """Superusers see every tenant; staff their principal's tenant; in dev mode an
    anonymous loopback caller the ``local`` tenant. None: not signed in.

    Raises:
        PermissionDenied: a staff account linked to no principal.
    """
    user = request.user
    if user.is_authenticated and user.is_active and user.is_staff:
        if user.is_superuser:
            return DashboardViewer(None, chooses_tenant=True)
        tenant = staff_tenant(request)
        if tenant is None:
            raise PermissionDenied("This account is linked to no principal.")
        return DashboardViewer(tenant)
    if platform_settings.DEV and is_loopback_request(request):
        tenant = get_dev_principal().tenant
        rls.enter_tenant(tenant.pk)
        return DashboardViewer(tenant)
    return None


def _bad_request(message: str) -> JsonResponse:
    return JsonResponse(error_body("invalid", message), status=400)


def dashboard(request: HttpRequest) -> HttpResponse:
    """``/admin/dashboard/``: activity, failure rate, tokens and cost per agent, latest sessions.

    ``?days=`` picks the period (one of ``PERIODS``); a superuser may pick ``?tenant=<slug>``.
    """
    viewer = dashboard_viewer(request)
    if viewer is None:
        return redirect_to_login(request.get_full_path(), "admin:login")
    days_param = request.GET.get("days", str(PERIODS[0]))
    if days_param not in {str(days) for days in PERIODS}:
        return _bad_request(f"days must be one of {', '.join(map(str, sorted(PERIODS)))}, not {days_param!r}.")
    days = int(days_param)
    tenant, tenants = viewer.tenant, []
    if viewer.chooses_tenant:
        tenants = list(Tenant.objects.order_by("slug"))
        slug = request.GET.get("tenant", "")
        if slug:
            tenant = next((t for t in tenants if t.slug == slug), None)
            if tenant is None:
                return _bad_request(f"No tenant {slug!r}.")
    data = build_dashboard(tenant, days)
    return render(
        request,
        "dashboard.html",
        {
            "dashboard": data,
            "charts": charts_for(data),
            "tenant": tenant,
            "tenants": tenants,
            "chooses_tenant": viewer.chooses_tenant,
            "days": days,
            "periods": sorted(PERIODS),
        },
    )
