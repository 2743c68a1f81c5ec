from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Q, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest
from django.utils import timezone

from agent_platform.admin import TenantScopedAdmin, staff_tenant
from agent_platform.conf import platform_settings
from agents import secrets
from agents.models import Agent, AgentSecret
from agents.sdk._definitions import secret_name_problem


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


class AgentSecretForm(forms.ModelForm):
    """Write-only: the value is typed in and never shown again (not even after a mistake),
    and the admin's history records only that it changed."""

    value = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        strip=False,
        max_length=secrets.MAX_VALUE_CHARS,
        help_text="Write-only: never shown again. On an existing secret, leave empty to keep the stored value.",
    )

    class Meta:
        model = AgentSecret
        fields = ["agent", "name"]

    def clean_name(self) -> str:
        name = str(self.cleaned_data.get("name", ""))
        problem = secret_name_problem(name)
        if problem is not None:
            raise forms.ValidationError(problem)
        return name

    def clean_value(self) -> str:
        value = str(self.cleaned_data.get("value") or "")
        if not value and self.instance.pk is None:
            raise forms.ValidationError("A new secret needs a value.")
        if value:
            try:
                secrets.checked_value(value)
            except secrets.InvalidSecret as invalid:
                raise forms.ValidationError(str(invalid)) from None
        return value


@admin.register(AgentSecret)
class AgentSecretAdmin(TenantScopedAdmin):
    """An agent's secrets by name. Staff manage their tenant's agents' secrets; a shared
    agent's belong to the operator's tenant (``PLATFORM["SHARED_AGENTS_TENANT"]``)."""

    form = AgentSecretForm
    list_display = ["name", "agent", "tenant", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["name", "agent__slug"]
    list_select_related = ["agent", "tenant"]

    def get_fields(self, request: HttpRequest, obj: AgentSecret | None = None) -> Any:
        return ["agent", "name", "value"] if obj is None else ["agent", "name", "value", "tenant", "updated_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: AgentSecret | None = None) -> Any:
        # Another name is another secret: add it, then delete this one.
        return [] if obj is None else ["agent", "name", "tenant", "updated_at"]

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> ModelChoiceField | None:
        if db_field.name == "agent" and not request.user.is_superuser:
            tenant = staff_tenant(request)
            agents = Agent.objects.none()
            if tenant is not None:
                mine = Q(tenant=tenant)
                if tenant.slug == platform_settings.SHARED_AGENTS_TENANT:
                    mine |= Q(tenant__isnull=True)
                agents = Agent.objects.filter(mine)
            kwargs["queryset"] = agents
            return admin.ModelAdmin.formfield_for_foreignkey(self, db_field, request, **kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: AgentSecret, form: Any, change: bool) -> None:
        value = form.cleaned_data.get("value") or ""
        if value:
            obj.ciphertext = secrets.encrypt(value)
            obj.updated_at = timezone.now()
        obj.tenant = secrets.owner_tenant(obj.agent)
        admin.ModelAdmin.save_model(self, request, obj, form, change)

    def construct_change_message(self, request: HttpRequest, form: Any, formsets: Any, add: bool = False) -> Any:
        # Django's records the changed fields' names only; said here so it stays that way.
        if add:
            return [{"added": {}}]
        return [{"changed": {"fields": ["value"]}}] if form.cleaned_data.get("value") else []
