"""Admin for tenancy, and the tenant scoping every platform admin class uses.

A superuser sees every row. A staff user acts as the principal linked to their
account and sees only their tenant's rows: lists, change pages and the choices
offered in foreign-key fields are all filtered. A staff user without a principal
sees nothing.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import get_fields_from_path
from django.db.models import QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest

from agent_platform.models import QUOTA_FIELDS, ApiToken, Principal, Tenant


def staff_tenant(request: HttpRequest) -> Tenant | None:
    """The tenant a staff user administers, or None when they have no principal."""
    principal = getattr(request.user, "principal", None)
    return principal.tenant if principal is not None else None


class TenantScopedAdmin(admin.ModelAdmin):
    """Filters rows to the staff user's tenant through ``tenant_path``.

    ``tenant_path`` is the lookup from the model to its tenant, e.g. ``"tenant"``
    or ``"session__tenant"``; ``"pk"`` scopes the Tenant model itself.
    """

    tenant_path = "tenant"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        tenant = staff_tenant(request)
        if tenant is None:
            return queryset.none()
        return queryset.filter(**{self.tenant_path: tenant.pk})

    def get_list_filter(self, request: HttpRequest) -> Any:
        # A plain relation filter lists every row of the related model, other
        # tenants' included; RelatedOnly lists the values in the scoped rows.
        return [
            (item, admin.RelatedOnlyFieldListFilter)
            if isinstance(item, str) and get_fields_from_path(self.model, item)[-1].is_relation
            else item
            for item in super().get_list_filter(request)
        ]

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> ModelChoiceField | None:
        related_admin = self.admin_site._registry.get(db_field.related_model)
        if not request.user.is_superuser and isinstance(related_admin, TenantScopedAdmin):
            kwargs["queryset"] = related_admin.get_queryset(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        readonly = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser and self.tenant_path == "tenant":
            readonly.append("tenant")
        return readonly

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not request.user.is_superuser and self.tenant_path == "tenant":
            obj.tenant = staff_tenant(request)
        super().save_model(request, obj, form, change)


class ReadOnlyAdmin(TenantScopedAdmin):
    """For records that are written by the platform and never edited or removed by hand,
    superusers included: an event log with a row removed has a gap that a stream resuming
    there waits on forever, and a turn edited by hand no longer says what happened."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    tenant_path = "pk"
    list_display = [
        "slug",
        "name",
        "retention_days",
        "cors_origins",
        "max_running_turns",
        "monthly_budget_usd",
        "created_at",
    ]
    search_fields = ["slug", "name"]
    date_hierarchy = "created_at"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # A tenant's own staff see its quotas and budget; only a superuser sets them.
        readonly = list(super().get_readonly_fields(request, obj))
        return readonly if request.user.is_superuser else [*readonly, *QUOTA_FIELDS]


@admin.register(Principal)
class PrincipalAdmin(TenantScopedAdmin):
    list_display = ["name", "tenant", "user", "created_at"]
    list_filter = ["tenant"]
    search_fields = ["name", "user__username", "tenant__slug"]
    autocomplete_fields = ["user"]
    list_select_related = ["tenant", "user"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Only superusers link accounts: a link grants admin access to the tenant.
        readonly = list(super().get_readonly_fields(request, obj))
        return readonly if request.user.is_superuser else [*readonly, "user"]


@admin.register(ApiToken)
class ApiTokenAdmin(TenantScopedAdmin):
    tenant_path = "principal__tenant"
    list_display = ["prefix", "principal", "name", "scopes", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), "principal__tenant"]
    search_fields = ["prefix", "name", "principal__name"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    list_select_related = ["principal__tenant"]
    actions = ["revoke_tokens"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["principal", "name", "scopes", "expires_at"]
        return ["principal", "name", "scopes", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        token = None if change else obj.assign_new_secret()
        super().save_model(request, obj, form, change)
        if token is not None:
            messages.warning(request, f"New token for {obj.principal}, shown only this once: {token}")

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset.filter(revoked_at__isnull=True):
            token.revoke()
