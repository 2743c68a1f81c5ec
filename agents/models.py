"""The agent registry's rows: which agents exist and who may use them, the revisions
tenants deploy, and the rules a row must keep: a slug that can be served under
``/<slug>/``, and a tree that is either a folder inside ``AGENTS_DIR`` (shared agents)
or a revision in the revision store (deployed agents, docs/deployments.md).

An agent's tree is code. A shared agent's ``path`` is kept by the registry and must
resolve (symlinks followed) inside ``AGENTS_DIR``; a deployed agent has no path at all:
its tree is its active revision, unpacked from the revision store into a folder of its
own, never a session workspace or any other folder on the server (docs/tenancy.md).
"""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from agent_platform.conf import platform_settings
from agent_platform.ids import new_id
from agent_platform.models import Principal, Tenant

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
    path = Path(path)
    if path.parent == agents_dir() and is_valid_slug(path.name) and not path.is_symlink():
        # A slug is one plain name (no "/", no ".."): a folder so named that is no symlink
        # resolves to AGENTS_DIR's own real path and that name, inside it. Every request
        # on a folder's agent asks, and resolving both paths costs a dozen lstats.
        return None
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
    path = models.CharField(
        max_length=1000,
        blank=True,
        help_text="A shared agent's folder in AGENTS_DIR (kept by the registry); empty for a deployed agent.",
    )
    active_revision = models.ForeignKey(
        "Revision",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The deployed revision new sessions use (deployed agents only).",
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        """The slug can be served; a shared agent's path is an agent folder inside
        ``AGENTS_DIR``; a deployed agent has a tenant and no path (its tree is a revision).

        Raises:
            ValidationError: naming the field and what to change.
        """
        errors: dict[str, str] = {}
        if problem := slug_problem(self.slug):
            errors["slug"] = problem
        if self.source == AgentSource.DEPLOYMENT:
            if self.path:
                errors["path"] = "a deployed agent's tree is its revision: it has no server path"
            if self.tenant_id is None:
                errors["tenant"] = "a deployed agent belongs to a tenant"
        elif problem := path_problem(self.path):
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


class RevisionStatus(models.TextChoices):
    READY = "ready", "Validated, may be activated"
    INVALID = "invalid", "Has errors, cannot be activated"


class Revision(models.Model):
    """One uploaded tree of a deployed agent, named by the hash of its files.

    The uploaded archive is kept in the revision store (the ``deployments`` storage,
    Django's storage API); each process unpacks it into a folder of its own
    (``agents.deployments.revision_folder``). Rows are never changed after upload:
    activating one moves ``Agent.active_revision``.
    """

    id = models.CharField(primary_key=True, max_length=40, default=partial(new_id, "dep"), editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="revisions")
    hash = models.CharField(max_length=64, help_text="sha256 of the tree: every file's path and content.")
    status = models.CharField(max_length=10, choices=RevisionStatus.choices)
    diagnostics = models.JSONField(default=list, blank=True, help_text="What `agent validate` reports.")
    archive = models.CharField(max_length=300, help_text="The archive's name in the revision store.")
    files = models.PositiveIntegerField(default=0)
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes of the unpacked tree.")
    uploaded_by = models.ForeignKey(Principal, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["agent", "hash"], name="revision_unique_hash_per_agent")]

    def __str__(self) -> str:
        return f"{self.agent.slug}@{self.hash[:12]}"


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
