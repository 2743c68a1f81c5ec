"""Keep the "Tenant staff" group's permissions in step with the models."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.dispatch import receiver

TENANT_STAFF_GROUP = "Tenant staff"
# Apps whose rows tenant staff manage (always filtered to their own tenant).
TENANT_STAFF_APPS = ("agent_platform", "agents", "sessions_app")
# Rows only superusers may create, change or remove. Tenant staff may add a deployed agent of
# their tenant (it has no path: its tree is an uploaded revision, agents.admin.AgentAdmin).
SUPERUSER_ONLY_CODENAMES = ("add_tenant", "delete_tenant", "change_agent", "delete_agent")


@receiver(post_migrate)
def sync_tenant_staff_group(sender: AppConfig, **kwargs: Any) -> None:
    from django.contrib.auth.models import Group, Permission

    if sender.name != "sessions_app":  # once, after the last of our apps migrated
        return
    group, _ = Group.objects.get_or_create(name=TENANT_STAFF_GROUP)
    permissions = Permission.objects.filter(content_type__app_label__in=TENANT_STAFF_APPS).exclude(
        codename__in=SUPERUSER_ONLY_CODENAMES
    )
    group.permissions.set(permissions)
