"""Sessions in the admin: each session's event timeline inline with a link to open it
in the playground, approvals decided through the same service as the API, and
artifacts downloadable. Every class is tenant-scoped (``TenantScopedAdmin``).
"""

from __future__ import annotations

import json
import re
from datetime import UTC
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST

from agent_platform.admin import ReadOnlyAdmin, TenantScopedAdmin
from sessions_app.approvals import decide_approval
from sessions_app.models import (
    ABAssignment,
    Approval,
    ApprovalStatus,
    Artifact,
    EvalRun,
    Event,
    KVEntry,
    LogLine,
    Reminder,
    ScheduleFire,
    Session,
    StoredFile,
    Turn,
    WebhookDelivery,
    WebhookSubscription,
)
from sessions_app.records.artifacts import content_of
from sessions_app.records.retention import due_sessions
from sessions_app.services import SessionError

# The session page shows this many of the latest events; the event list has them all.
TIMELINE_EVENTS = 300
EVENT_DATA_CHARS = 160


def playground_url(session: Session) -> str:
    return f"/{session.agent.slug}/playground?session={session.pk}"


class EventTimeline(admin.TabularInline):
    """The session's events in order, read-only."""

    model = Event
    fields = readonly_fields = ("index", "type", "turn_link", "time", "summary")
    ordering = ["index"]
    extra = 0
    can_delete = False
    verbose_name = "event"
    verbose_name_plural = "event timeline"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="turn")
    def turn_link(self, event: Event) -> str:
        # From the id alone: loading each row's turn would cost a query per event.
        if event.turn_id is None:
            return "-"
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:sessions_app_turn_change", args=[quote(event.turn_id)]), event.turn_id
        )

    @admin.display(description="at (UTC)")
    def time(self, event: Event) -> str:
        return event.at.astimezone(UTC).strftime("%m-%d %H:%M:%S.%f")[:-3]

    @admin.display(description="data")
    def summary(self, event: Event) -> str:
        text = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"), default=str)
        return text if len(text) <= EVENT_DATA_CHARS else text[: EVENT_DATA_CHARS - 1] + "…"


class RetentionFilter(admin.SimpleListFilter):
    """What the next retention pass will delete (docs/retention.md)."""

    title = "retention"
    parameter_name = "retention"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("due", "Due for removal"), ("kept", "Kept")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Session]) -> QuerySet[Session]:
        if self.value() == "due":
            return queryset.filter(pk__in=due_sessions().values("pk"))
        if self.value() == "kept":
            return queryset.exclude(pk__in=due_sessions().values("pk"))
        return queryset


@admin.register(Session)
class SessionAdmin(TenantScopedAdmin):
    """Sessions are made through the API; the contract lets their owner change only the
    title, so that is the one field the page edits. Removing one (its whole log with it)
    is the operator's: a superuser's."""

    list_display = ["id", "agent", "principal", "mode", "purpose", "status", "title", "dry_run", "created_at"]
    list_display += ["playground"]
    list_filter = [RetentionFilter, "status", "mode", "purpose", "dry_run", "channel", "agent", "tenant"]
    search_fields = ["id", "title", "continuation_key", "forked_from"]
    date_hierarchy = "created_at"
    list_select_related = ["agent", "principal__tenant", "tenant"]
    inlines = [EventTimeline]
    EDITABLE_FIELDS = ("title",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        recorded = [field.name for field in Session._meta.concrete_fields if field.name not in self.EDITABLE_FIELDS]
        return [*recorded, "playground", "event_log"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser) and super().has_delete_permission(request, obj)

    def get_formset_kwargs(self, request: HttpRequest, obj: Any, inline: Any, prefix: str) -> dict[str, Any]:
        kwargs: dict[str, Any] = super().get_formset_kwargs(request, obj, inline, prefix)
        if isinstance(inline, EventTimeline) and obj.pk is not None:
            # A long session has thousands of events; the page keeps the latest.
            kwargs["queryset"] = kwargs["queryset"].filter(index__gte=obj.next_event_index - TIMELINE_EVENTS)
        return kwargs

    @admin.display(description="Playground")
    def playground(self, obj: Session) -> str:
        return format_html('<a href="{}" class="playground-link">Open in playground</a>', playground_url(obj))

    @admin.display(description="Events")
    def event_log(self, obj: Session) -> str:
        url = reverse("admin:sessions_app_event_changelist") + f"?session__id__exact={obj.pk}"
        shown = f" (the timeline shows the last {TIMELINE_EVENTS})" if obj.next_event_index > TIMELINE_EVENTS else ""
        return format_html('<a href="{}">{} events</a>{}', url, obj.next_event_index, shown)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    tenant_path = "session__tenant"
    list_display = ["session", "index", "type", "turn", "at"]
    list_filter = ["type"]
    search_fields = ["session__id", "turn__id"]
    list_select_related = ["session"]
    ordering = ["session", "index"]


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    tenant_path = "session__tenant"
    list_display = ["id", "session", "status", "attempts", "created_at", "started_at", "ended_at", "cost"]
    list_filter = ["status"]
    search_fields = ["id", "session__id", "failure_message"]
    date_hierarchy = "created_at"


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    """Approvals are made by turns and decided only through ``decide_approval``, as
    the API does: the row is never edited or removed by hand (a removed pending call
    would leave its turn parked for good), so its turn always resumes."""

    tenant_path = "session__tenant"
    list_display = ["call_id", "tool_name", "session", "status", "decided_by", "requested_at", "decided_at"]
    list_filter = ["status", "tool_name"]
    search_fields = ["call_id", "tool_name", "session__id"]
    list_select_related = ["session", "decided_by__tenant"]
    fields = readonly_fields = (
        *("session", "turn", "call_id", "tool_name", "args", "args_sha256"),
        *("status", "reason", "decided_by", "requested_at", "decided_at"),
    )
    actions = ["approve_selected", "deny_selected"]

    def has_decide_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("sessions_app.change_approval")

    def get_urls(self) -> list[URLPattern]:
        decide = self.admin_site.admin_view(require_POST(self.decide_view))
        return [path("<path:object_id>/decide/", decide, name="sessions_app_approval_decide"), *super().get_urls()]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None) -> Any:
        approval = self.get_object(request, unquote(object_id))
        can_decide = (
            approval is not None and approval.status == ApprovalStatus.PENDING and self.has_decide_permission(request)
        )
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), "can_decide": can_decide})

    def decide_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST ``decision`` (approve or deny) and an optional ``reason`` from the change page."""
        approval = self.get_object(request, unquote(object_id))
        if approval is None or not self.has_decide_permission(request, approval):
            raise Http404("No such approval.")
        decision = request.POST.get("decision")
        if decision not in ("approve", "deny"):
            self.message_user(request, "Choose approve or deny.", messages.ERROR)
        else:
            self._decide(request, [approval], approve=decision == "approve", reason=request.POST.get("reason", ""))
        return HttpResponseRedirect(reverse("admin:sessions_app_approval_change", args=[quote(approval.pk)]))

    @admin.action(description="Approve selected calls", permissions=["decide"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._decide(request, queryset.select_related("session"), approve=True, reason="")

    @admin.action(description="Deny selected calls", permissions=["decide"])
    def deny_selected(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._decide(request, queryset.select_related("session"), approve=False, reason="")

    def _decide(self, request: HttpRequest, approvals: Any, *, approve: bool, reason: str) -> None:
        # Staff act as their principal, as a caller of the API would.
        principal = getattr(request.user, "principal", None)
        if principal is None:
            self.message_user(request, "Link your account to a principal to decide approvals.", messages.ERROR)
            return
        verb = "Approved" if approve else "Denied"
        for approval in approvals:
            try:
                decide_approval(approval.session, approval.call_id, approve=approve, reason=reason, principal=principal)
            except SessionError as error:
                self.message_user(request, f"{approval}: {error}", messages.ERROR)
            else:
                self.message_user(request, f"{verb} {approval} as {principal}.", messages.SUCCESS)


# Characters never kept in a downloaded file's name.
_UNSAFE_FILENAME = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+')
_CONTENT_TYPE = re.compile(r"[\w.+-]+/[\w.+-]+\Z")


def download_filename(name: str) -> str:
    """A file name a browser can save as-is: no folders, control or reserved characters."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE_FILENAME.sub("_", base).strip(" .")
    return cleaned[:200] or "artifact"


def download_content_type(content_type: str) -> str:
    """The stored type when it is a plain ``type/subtype``; otherwise opaque bytes."""
    bare = content_type.split(";", 1)[0].strip()
    return bare if _CONTENT_TYPE.match(bare) else "application/octet-stream"


@admin.register(Artifact)
class ArtifactAdmin(ReadOnlyAdmin):
    """What agents tagged (``ctx.artifacts.tag``, ``tag_artifact``): read-only, since an agent
    writes them and their retention removes them; the bytes download as an attachment."""

    tenant_path = "tenant"
    list_display = ["id", "name", "kind", "content_type", "size", "session", "updated_at", "expires_at", "download"]
    list_filter = ["kind", "content_type"]
    search_fields = ["id", "name", "session__id"]
    exclude = ["content"]
    readonly_fields = ["id", "size", "created_at", "updated_at", "download"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # Lists and pages never need the bytes; the download view loads them.
        return super().get_queryset(request).defer("content")

    def get_urls(self) -> list[URLPattern]:
        download = self.admin_site.admin_view(self.download_view)
        return [
            path("<path:object_id>/download/", download, name="sessions_app_artifact_download"),
            *super().get_urls(),
        ]

    @admin.display(description="File")
    def download(self, obj: Artifact) -> str:
        if obj.pk is None or obj._state.adding or not obj.has_content:
            return "-"
        url = reverse("admin:sessions_app_artifact_download", args=[quote(obj.pk)])
        return format_html('<a href="{}" download>Download</a>', url)

    def download_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The artifact's bytes as an attachment; another tenant's artifact is a 404."""
        artifact = self.get_object(request, unquote(object_id))
        if artifact is None or not self.has_view_permission(request, artifact):
            raise Http404("No such artifact.")
        content = content_of(artifact)
        if content is None:
            raise Http404("This artifact has no content.")
        response = HttpResponse(content, content_type=download_content_type(artifact.content_type))
        response["Content-Disposition"] = content_disposition_header(True, download_filename(artifact.name))
        # Never rendered in our origin, whatever the bytes claim to be.
        response["Content-Security-Policy"] = "sandbox"
        return response


@admin.register(ABAssignment)
class ABAssignmentAdmin(TenantScopedAdmin):
    tenant_path = "session__tenant"
    list_display = ["session", "agent", "experiment", "arm", "assigned_at"]
    list_filter = ["agent", "experiment", "arm"]
    search_fields = ["session__id", "experiment"]


@admin.register(Reminder)
class ReminderAdmin(ReadOnlyAdmin):
    """Reminders as ``ctx.host.reminders`` left them; the sweep and the dev route change them."""

    tenant_path = "session__tenant"
    list_display = ["id", "session", "message", "fire_at", "status", "fired_at", "turn"]
    list_filter = ["status"]
    search_fields = ["id", "session__id", "message"]
    date_hierarchy = "fire_at"


@admin.register(ScheduleFire)
class ScheduleFireAdmin(ReadOnlyAdmin):
    """Each schedule fire once: what ran, what was skipped as missed, what failed."""

    list_display = ["schedule_id", "agent", "scheduled_for", "manual", "status", "session_ids", "created_at"]
    list_filter = ["status", "manual", "agent"]
    search_fields = ["schedule_id"]
    date_hierarchy = "scheduled_for"


@admin.register(KVEntry)
class KVEntryAdmin(TenantScopedAdmin):
    list_display = ["key", "agent", "tenant", "updated_at"]
    list_filter = ["agent", "tenant"]
    search_fields = ["key"]


@admin.register(StoredFile)
class StoredFileAdmin(TenantScopedAdmin):
    list_display = ["path", "scope", "agent", "session", "size", "etag", "updated_at"]
    list_filter = ["scope", "agent", "tenant"]
    search_fields = ["path", "session__id"]
    exclude = ["content"]
    readonly_fields = ["size", "etag"]


@admin.register(EvalRun)
class EvalRunAdmin(TenantScopedAdmin):
    list_display = ["id", "agent", "status", "principal", "created_at", "started_at", "ended_at"]
    list_filter = ["status", "agent"]
    search_fields = ["id"]
    date_hierarchy = "created_at"


@admin.register(LogLine)
class LogLineAdmin(ReadOnlyAdmin):
    list_display = ["at", "level", "logger", "agent_slug", "session_id", "message"]
    list_filter = ["level", "agent_slug"]
    search_fields = ["message", "session_id", "logger"]
    date_hierarchy = "at"


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(TenantScopedAdmin):
    """A tenant's outbound webhooks; the URL is checked against the outbound policy on save."""

    list_display = ["url", "agent", "events", "active", "tenant", "created_at"]
    list_filter = ["active", "agent", "tenant"]
    search_fields = ["url"]
    list_select_related = ["agent", "tenant"]


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    """Each event sent to each webhook: its attempts, last answer and error (written by the platform)."""

    tenant_path = "session__tenant"
    list_display = ["event_type", "event_index", "session", "url", "status", "attempts", "last_status_code"]
    list_display += ["last_error", "next_attempt_at", "delivered_at"]
    list_filter = ["status", "event_type"]
    search_fields = ["session__id", "url", "id"]
    date_hierarchy = "created_at"
    list_select_related = ["session"]
    ordering = ["-created_at"]
