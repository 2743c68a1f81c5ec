"""The agent registry's rows: which agents exist and who may use them."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from agent_platform.models import Tenant


class AgentSource(models.TextChoices):
    DIRECTORY = "directory", "AGENTS_DIR folder"
    DEPLOYMENT = "deployment", "Deployed by a tenant"


class Agent(models.Model):
    """An agent served under ``/<slug>/``.

    Agents found in ``AGENTS_DIR`` are shared (no tenant): any principal may open
    sessions on them. A deployed agent belongs to one tenant and is invisible
    (404) to every other.
    """

    slug = models.CharField(max_length=100, unique=True)
    tenant = models.ForeignKey(
        Tenant,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="agents",
        help_text="Owning tenant; empty for a shared agent from AGENTS_DIR.",
    )
    source = models.CharField(max_length=20, choices=AgentSource.choices, default=AgentSource.DIRECTORY)
    path = models.CharField(max_length=1000, help_text="Folder holding the agent's tree.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_shared(self) -> bool:
        return self.tenant_id is None

    def visible_to(self, tenant: Tenant) -> bool:
        return self.tenant_id is None or self.tenant_id == tenant.pk
