"""The agent registry's rows: which agents exist and who may use them, and the rules a
row must keep: a slug that can be served under ``/<slug>/`` (DESIGN §3), and a folder
inside ``AGENTS_DIR``.

An agent's folder is imported into the serving and worker processes, which hold the
database credentials and ``SECRET_KEY``. Until tenant deployments arrive with their
sandbox, the only code trusted there is what the operator installed in ``AGENTS_DIR``:
so a row's path must resolve (symlinks followed) inside it, never to a session
workspace or any other folder on the server (docs/tenancy.md).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from agent_platform.conf import platform_settings
from agent_platform.models import Tenant

SLUG_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
# Short enough for one file name (and one URL segment) everywhere; the column's length.
SLUG_MAX_LENGTH = 100
# First URL segments the platform itself uses; no agent may take them.
RESERVED_SEGMENTS = frozenset({"v1", "playground", "docs", "admin", "api", "static", "ws"})


def slug_problem(slug: str) -> str | None:
    """Why ``slug`` cannot name an agent, or None when it can."""
    if len(slug) > SLUG_MAX_LENGTH:
        return f"slug {slug[:40]!r}... is longer than {SLUG_MAX_LENGTH} characters"
    if SLUG_PATTERN.fullmatch(slug) is None:
        return f"slug {slug!r} must be letters, digits, '_' and '-', starting with a letter or digit"
    if slug in RESERVED_SEGMENTS:
        return f"slug {slug!r} is reserved for the platform's own routes ({', '.join(sorted(RESERVED_SEGMENTS))})"
    return None


def is_valid_slug(slug: str) -> bool:
    return slug_problem(slug) is None


def agents_dir() -> Path:
    return Path(platform_settings.AGENTS_DIR)


def real_path(path: str | Path) -> Path | None:
    """``path`` with every symlink followed and ``..`` removed; None when no file can have it."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):  # NUL, a name too long
        return None


def path_problem(path: str | Path) -> str | None:
    """Why an agent row may not point at ``path``, or None: it must resolve, symlinks
    followed, to a folder strictly inside ``AGENTS_DIR``."""
    root, real = real_path(agents_dir()), real_path(path)
    if real is None or root is None:
        return f"path {str(path)[:200]!r} is not a usable folder name"
    if root not in real.parents:
        return (
            f"path {str(path)[:200]!r} resolves to {str(real)[:200]!r}, outside AGENTS_DIR ({str(root)!r}): "
            "agents are served only from folders the operator installed there"
        )
    return None


class AgentSource(models.TextChoices):
    DIRECTORY = "directory", "AGENTS_DIR folder"
    DEPLOYMENT = "deployment", "Deployed by a tenant"


class Agent(models.Model):
    """An agent served under ``/<slug>/``.

    Agents found in ``AGENTS_DIR`` are shared (no tenant): any principal may open
    sessions on them. A deployed agent belongs to one tenant and is invisible
    (404) to every other.
    """

    slug = models.CharField(max_length=SLUG_MAX_LENGTH, unique=True)
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

    def clean(self) -> None:
        """The slug follows DESIGN §3 and the path is an agent folder inside ``AGENTS_DIR``.

        Raises:
            ValidationError: naming the field and what to change.
        """
        errors: dict[str, str] = {}
        if problem := slug_problem(self.slug):
            errors["slug"] = problem
        if problem := path_problem(self.path):
            errors["path"] = problem
        elif not (Path(self.path) / "agent").is_dir():
            errors["path"] = f"path {self.path[:200]!r} holds no agent/ folder"
        if errors:
            raise ValidationError(errors)

    @property
    def is_shared(self) -> bool:
        return self.tenant_id is None

    def visible_to(self, tenant: Tenant) -> bool:
        return self.tenant_id is None or self.tenant_id == tenant.pk


class AgentSecret(models.Model):
    """A secret bound to one agent, by name; write-only: its value is kept only as Fernet
    ciphertext (``agents.secrets``) and never shown, logged or listed.

    ``tenant`` is the tenant whose staff manage it: the agent's own, or for a shared
    ``AGENTS_DIR`` agent ``PLATFORM["SHARED_AGENTS_TENANT"]`` (the operator's).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="agent_secrets")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="stored_secrets")
    name = models.CharField(max_length=128)
    ciphertext = models.TextField(editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["agent__slug", "name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="agent_secret_unique_name_per_agent")]

    def __str__(self) -> str:
        return f"{self.agent.slug}/{self.name}" if self.agent_id else self.name

    def __repr__(self) -> str:
        return f"<AgentSecret {self.agent_id}/{self.name}>"
