"""Agents and their deployments in the admin.

An agent row never names a folder: a shared agent's path is the registry's (its
``AGENTS_DIR`` folder), a deployed agent's tree is a revision uploaded here or through the
API (``agents.deployments``), so no form has a path field. Tenant staff add their
tenant's deployed agents, upload revisions (the diagnostics are shown on the
revision's page) and activate them; only superusers change or remove agent rows.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.forms import ModelChoiceField
from django.forms.models import construct_instance
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from agent_platform.admin import TenantScopedAdmin, staff_tenant
from agent_platform.conf import platform_settings
from agent_platform.errors import DomainError
from agent_platform.models import Tenant
from agents import archives, deployments, secrets
from agents.models import Agent, AgentSecret, AgentSource, Revision, RevisionStatus
from agents.sdk._definitions import secret_name_problem


class AgentAddForm(forms.ModelForm):
    """A new deployed agent: a slug (and, for a superuser, its tenant); no path."""

    class Meta:
        model = Agent
        fields = ["slug", "tenant"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "tenant" in self.fields:
            self.fields["tenant"].required = True

    def validate_unique(self) -> None:  # deployments.create_agent decides, with the shared names
        pass

    def _post_clean(self) -> None:
        # Not the model's full_clean: the row is made by deployments.create_agent.
        self.instance = construct_instance(self, self.instance, self._meta.fields)
        slug = self.cleaned_data.get("slug", "")
        if slug and deployments.shared_name_holds(slug):
            self.add_error("slug", f"The slug {slug!r} belongs to a shared agent of AGENTS_DIR; choose another.")
        elif slug and Agent.objects.filter(slug=slug).exists():
            self.add_error("slug", f"The slug {slug!r} is taken; choose another.")
        elif slug and (problem := deployments.slug_problem(slug)):
            self.add_error("slug", problem)


@admin.register(Agent)
class AgentAdmin(TenantScopedAdmin):
    """Tenant staff see their own and the shared agents, and add deployed agents of their
    tenant; superusers may change or remove rows. No form has a path field."""

    list_display = ["slug", "tenant", "source", "active_revision", "updated_at"]
    list_filter = ["source", "tenant"]
    search_fields = ["slug"]
    list_select_related = ["tenant", "active_revision"]
    readonly_fields = ["source", "path", "active_revision", "created_at", "updated_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = admin.ModelAdmin.get_queryset(self, request)
        if request.user.is_superuser:
            return queryset
        tenant = staff_tenant(request)
        if tenant is None:
            return queryset.none()
        return queryset.filter(Q(tenant=tenant) | Q(tenant__isnull=True))

    def get_form(self, request: HttpRequest, obj: Agent | None = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = AgentAddForm
            kwargs["fields"] = ["slug", "tenant"] if request.user.is_superuser else ["slug"]
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Agent | None = None) -> Any:
        if obj is None:
            return ["slug", "tenant"] if request.user.is_superuser else ["slug"]
        return ["slug", "tenant", "source", "path", "active_revision", "created_at", "updated_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None) -> Any:
        if obj is None:
            return []
        return ["slug", "tenant", *self.readonly_fields]

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        tenant: Tenant | None = obj.tenant if request.user.is_superuser else staff_tenant(request)
        assert tenant is not None  # the form requires one; staff without a principal see no add page
        created = deployments.create_agent(tenant, obj.slug)
        obj.pk, obj.tenant, obj.source, obj.path = created.pk, tenant, AgentSource.DEPLOYMENT, ""
        obj._state.adding = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser) or (
            staff_tenant(request) is not None and super().has_add_permission(request)
        )

    def has_change_permission(self, request: HttpRequest, obj: Agent | None = None) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Agent | None = None) -> bool:
        return bool(request.user.is_superuser)


class RevisionUploadForm(forms.ModelForm):
    """Upload an archive as a new revision of one of the tenant's deployed agents. The
    upload happens while the form is checked, so a refused archive is a form error."""

    archive = forms.FileField(help_text="A .tar.gz or .zip whose root holds agent/ (and optionally evals/).")
    activate = forms.BooleanField(required=False, help_text="Activate it if it has no errors.")

    class Meta:
        model = Revision
        fields = ["agent"]

    uploaded: Revision | None = None
    principal: Any = None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        agent, upload = data.get("agent"), data.get("archive")
        if agent is None or upload is None:
            return data
        try:
            self.uploaded, _ = deployments.upload(agent, iter(upload.chunks(archives.CHUNK)), self.principal)
        except DomainError as refused:
            raise ValidationError(str(refused)) from None
        return data


@admin.register(Revision)
class RevisionAdmin(TenantScopedAdmin):
    """Deployments: upload (the add page), the diagnostics on each revision's page, and the
    "Activate" action. Revisions are never edited."""

    tenant_path = "agent__tenant"
    list_display = ["__str__", "agent", "status", "is_active", "files", "uploaded_by", "created_at"]
    list_filter = ["status", "agent"]
    list_select_related = ["agent", "uploaded_by"]
    actions = ["activate_revision"]
    form = RevisionUploadForm

    def get_fields(self, request: HttpRequest, obj: Revision | None = None) -> Any:
        if obj is None:
            return ["agent", "archive", "activate"]
        return [
            "agent",
            "hash",
            "status",
            "is_active",
            "shown_diagnostics",
            "files",
            "size",
            "uploaded_by",
            "created_at",
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Revision | None = None) -> Any:
        return [] if obj is None else self.get_fields(request, obj)

    def get_form(self, request: HttpRequest, obj: Revision | None = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if obj is None:  # the upload is made in the form's clean(), as the staff user's principal
            return type(form.__name__, (form,), {"principal": getattr(request.user, "principal", None)})
        return form

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "agent":
            agents = Agent.objects.filter(source=AgentSource.DEPLOYMENT)
            kwargs["queryset"] = agents if request.user.is_superuser else agents.filter(tenant=staff_tenant(request))
        return admin.ModelAdmin.formfield_for_foreignkey(self, db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Revision, form: Any, change: bool) -> None:
        revision = form.uploaded
        assert revision is not None  # clean() uploaded it
        for field in Revision._meta.concrete_fields:
            setattr(obj, field.attname, getattr(revision, field.attname))
        obj._state.adding = False
        if revision.status != RevisionStatus.READY:
            messages.error(request, f"{revision} has errors (see its diagnostics); it was not activated.")
        elif form.cleaned_data.get("activate"):
            deployments.activate(revision.agent, revision.pk)
            messages.success(request, f"{revision} is active: new sessions use it.")

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        pass

    def response_add(self, request: HttpRequest, obj: Revision, post_url_continue: str | None = None) -> Any:
        # To the new revision's page, where its diagnostics are shown.
        return HttpResponseRedirect(reverse("admin:agents_revision_change", args=[quote(obj.pk)]))

    def has_change_permission(self, request: HttpRequest, obj: Revision | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Revision | None = None) -> bool:
        return False

    @admin.display(boolean=True, description="active")
    def is_active(self, obj: Revision) -> bool:
        return bool(obj.agent.active_revision_id == obj.pk)

    @admin.display(description="diagnostics")
    def shown_diagnostics(self, obj: Revision) -> str:
        if not obj.diagnostics:
            return "none: agent validate reports nothing"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li><strong>{} {}</strong> {}: {}<br>hint: {}</li>",
                (
                    (d.get("severity", "").upper(), d.get("code"), d.get("path"), d.get("message"), d.get("hint"))
                    for d in obj.diagnostics
                ),
            ),
        )

    @admin.action(description="Activate the selected revision (new sessions use it)")
    def activate_revision(self, request: HttpRequest, queryset: QuerySet[Revision]) -> None:
        chosen = list(queryset.select_related("agent")[:2])
        if len(chosen) != 1:
            messages.error(request, "Select exactly one revision to activate.")
            return
        try:
            deployments.activate(chosen[0].agent, chosen[0].pk)
        except DomainError as refused:
            messages.error(request, str(refused))
            return
        messages.success(request, f"{chosen[0]} is active: new sessions use it.")


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
