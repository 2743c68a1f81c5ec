from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from agent_platform.admin import TenantScopedAdmin, staff_tenant
from agents.models import Agent


@admin.register(Agent)
class AgentAdmin(TenantScopedAdmin):
    """Agent rows are the operator's: a row names a folder whose code the serving
    processes import, so only superusers add, change or remove one (and its path must be
    an agent folder inside AGENTS_DIR: ``Agent.clean``). Tenant staff see their own and
    the shared agents, read-only, until tenant deployments arrive with their sandbox."""

    list_display = ["slug", "tenant", "source", "path", "updated_at"]
    list_filter = ["source", "tenant"]
    search_fields = ["slug", "path"]
    list_select_related = ["tenant"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = admin.ModelAdmin.get_queryset(self, request)
        if request.user.is_superuser:
            return queryset
        tenant = staff_tenant(request)
        if tenant is None:
            return queryset.none()
        return queryset.filter(Q(tenant=tenant) | Q(tenant__isnull=True))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    def has_change_permission(self, request: HttpRequest, obj: Agent | None = None) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Agent | None = None) -> bool:
        return bool(request.user.is_superuser)
