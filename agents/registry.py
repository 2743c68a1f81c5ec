"""Which agents exist: folders under ``AGENTS_DIR`` and agents deployed by tenants.

An agent folder is ``AGENTS_DIR/<slug>/`` holding an ``agent/`` tree. Directory
agents get a shared ``Agent`` row the first time they are asked for, so a folder
added while the server runs is served without a restart; a row whose folder has
gone is not served.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.db import IntegrityError, transaction

from agent_platform.conf import platform_settings
from agent_platform.models import Tenant
from agents.models import Agent, AgentSource

SLUG_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
# First URL segments the platform itself uses; no agent may take them.
RESERVED_SEGMENTS = frozenset({"v1", "playground", "docs", "admin", "api", "static", "ws"})


def is_valid_slug(slug: str) -> bool:
    return SLUG_PATTERN.fullmatch(slug) is not None and slug not in RESERVED_SEGMENTS


def agents_dir() -> Path:
    return Path(platform_settings.AGENTS_DIR)


def agent_folders(root: Path | None = None) -> dict[str, Path]:
    """Agent folders under ``root`` (default ``AGENTS_DIR``) by slug, in slug order."""
    root = agents_dir() if root is None else root
    if not root.is_dir():
        return {}
    return {
        child.name: child
        for child in sorted(root.iterdir())
        if is_valid_slug(child.name) and (child / "agent").is_dir()
    }


def _directory_folder(slug: str) -> Path | None:
    if not is_valid_slug(slug):
        return None
    folder = agents_dir() / slug
    return folder if (folder / "agent").is_dir() else None


def get_agent(slug: str) -> Agent | None:
    """The agent served under ``/<slug>/``, or None if there is none."""
    row = Agent.objects.filter(slug=slug).select_related("tenant").first()
    if row is not None and row.source == AgentSource.DEPLOYMENT:
        return row
    folder = _directory_folder(slug)
    if folder is None:
        return None
    if row is None:
        try:
            with transaction.atomic():
                row = Agent.objects.create(slug=slug, source=AgentSource.DIRECTORY, path=str(folder))
        except IntegrityError:  # another request registered it first
            row = Agent.objects.get(slug=slug)
    elif row.path != str(folder):
        row.path = str(folder)
        row.save(update_fields=["path", "updated_at"])
    return row


def get_visible_agent(slug: str, tenant: Tenant | None) -> Agent | None:
    """The agent if ``tenant`` may see it: shared agents are visible to everyone
    (even unauthenticated health checks), a tenant's own agents only to it."""
    agent = get_agent(slug)
    if agent is None:
        return None
    if agent.is_shared or (tenant is not None and agent.tenant_id == tenant.pk):
        return agent
    return None


def served_agents(tenant: Tenant | None) -> list[Agent]:
    """Every agent ``tenant`` may use, in slug order: the shared folders of
    ``AGENTS_DIR`` and the tenant's own deployed agents."""
    shared = [agent for slug in agent_folders() if (agent := get_agent(slug)) is not None and agent.is_shared]
    own = list(Agent.objects.filter(tenant=tenant, source=AgentSource.DEPLOYMENT)) if tenant is not None else []
    return sorted(shared + own, key=lambda agent: agent.slug)
