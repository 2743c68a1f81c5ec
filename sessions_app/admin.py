from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from agent_platform.admin import ReadOnlyAdmin, TenantScopedAdmin
from sessions_app.models import (
    ABAssignment,
    Approval,
    Artifact,
    EvalRun,
    Event,
    KVEntry,
    LogLine,
    Reminder,
    Session,
    StoredFile,
    Turn,
)


@admin.register(Session)
class SessionAdmin(TenantScopedAdmin):
    list_display = ["id", "agent", "principal", "mode", "purpose", "status", "title", "dry_run", "created_at"]
    list_filter = ["status", "mode", "purpose", "dry_run", "channel", "agent", "tenant"]
    search_fields = ["id", "title", "continuation_key"]
    date_hierarchy = "created_at"
    list_select_related = ["agent", "principal__tenant", "tenant"]
    readonly_fields = ["id", "next_event_index", "created_at", "updated_at", "event_log"]

    @admin.display(description="Events")
    def event_log(self, obj: Session) -> str:
        url = reverse("admin:sessions_app_event_changelist") + f"?session__id__exact={obj.pk}"
        return format_html('<a href="{}">{} events</a>', url, obj.next_event_index)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    tenant_path = "session__tenant"
    list_display = ["session", "index", "type", "turn", "at"]
    list_filter = ["type"]
    search_fields = ["session__id", "turn__id"]
    list_select_related = ["session"]
    ordering = ["session", "index"]


@admin.register(Turn)
class TurnAdmin(TenantScopedAdmin):
    tenant_path = "session__tenant"
    list_display = ["id", "session", "status", "attempts", "created_at", "started_at", "ended_at", "cost"]
    list_filter = ["status"]
    search_fields = ["id", "session__id", "failure_message"]
    date_hierarchy = "created_at"
    readonly_fields = ["id", "created_at"]


@admin.register(Approval)
class ApprovalAdmin(TenantScopedAdmin):
    tenant_path = "session__tenant"
    list_display = ["call_id", "tool_name", "session", "status", "decided_by", "requested_at", "decided_at"]
    list_filter = ["status", "tool_name"]
    search_fields = ["call_id", "tool_name", "session__id"]
    readonly_fields = ["args_sha256", "requested_at"]


@admin.register(Artifact)
class ArtifactAdmin(TenantScopedAdmin):
    tenant_path = "session__tenant"
    list_display = ["id", "name", "kind", "content_type", "size", "session", "created_at", "expires_at"]
    list_filter = ["kind", "content_type"]
    search_fields = ["id", "name", "session__id"]
    exclude = ["content"]
    readonly_fields = ["id", "size", "created_at"]


@admin.register(ABAssignment)
class ABAssignmentAdmin(TenantScopedAdmin):
    tenant_path = "session__tenant"
    list_display = ["session", "agent", "experiment", "arm", "assigned_at"]
    list_filter = ["agent", "experiment", "arm"]
    search_fields = ["session__id", "experiment"]


@admin.register(Reminder)
class ReminderAdmin(TenantScopedAdmin):
    tenant_path = "session__tenant"
    list_display = ["id", "session", "fire_at", "status", "fired_at"]
    list_filter = ["status"]
    search_fields = ["id", "session__id", "message"]
    date_hierarchy = "fire_at"


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
