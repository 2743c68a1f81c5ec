from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from agent_platform.admin import TenantScopedAdmin, staff_tenant
from agents.models import Agent


@admin.register(Agent)
class AgentAdmin(TenantScopedAdmin):
    list_display = ["slug", "tenant", "source", "path", "updated_at"]
    list_filter = ["source", "tenant"]
    search_fields = ["slug", "path"]
    list_select_related = ["tenant"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # Staff also see the shared agents their tenant may use, read-only.
        queryset = admin.ModelAdmin.get_queryset(self, request)
        if request.user.is_superuser:
            return queryset
        tenant = staff_tenant(request)
        if tenant is None:
            return queryset.none()
        return queryset.filter(Q(tenant=tenant) | Q(tenant__isnull=True))

    def has_change_permission(self, request: HttpRequest, obj: Agent | None = None) -> bool:
        if obj is not None and obj.is_shared and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Agent | None = None) -> bool:
        if obj is not None and obj.is_shared and not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj)
