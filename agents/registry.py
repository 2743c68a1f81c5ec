"""Which agents exist: folders under ``AGENTS_DIR`` and agents deployed by tenants.

An agent folder is ``AGENTS_DIR/<slug>/`` holding an ``agent/`` tree. Directory
agents get a shared ``Agent`` row the first time they are asked for, so a folder
added while the server runs is served without a restart; a row whose folder has
gone is not served. A deployed agent is served once it has an active revision
(``agents.deployments``). ``surface_for`` gives an agent's discovered surface: a
deployed agent's is its active revision's, or the revision a session started on.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connection, transaction

from agent_platform import rls
from agent_platform.conf import platform_settings
from agent_platform.models import Tenant
from agent_platform.rows import columns, instance
from agents.config import outbound_policy
from agents.discovery import AgentSurface, TreeLoader, discover, tree_fingerprint
from agents.models import RESERVED_SEGMENTS as RESERVED_SEGMENTS  # the slug rules live with the model
from agents.models import Agent, AgentSource, Revision, agents_dir, path_problem
from agents.models import is_valid_slug as is_valid_slug
from agents.sandbox import SandboxLoader, sandboxed_surface
from agents.secrets import resolve_many

logger = logging.getLogger(__name__)


def agent_folders(root: Path | None = None) -> dict[str, Path]:
    """Agent folders under ``root`` (default ``AGENTS_DIR``: then only those really in it) by
    slug, in slug order. The CLI passes a folder of its own to run agents from."""
    served = root is None
    root = agents_dir() if root is None else root
    if not root.is_dir():
        return {}
    return {
        child.name: child
        for child in sorted(root.iterdir())
        if is_valid_slug(child.name) and (child / "agent").is_dir() and (not served or _inside_agents_dir(child))
    }


def _inside_agents_dir(folder: Path) -> bool:
    """Whether ``folder`` really is in AGENTS_DIR: a symlink there that leads out, say to
    a session workspace, is never imported (``agents.models.path_problem``)."""
    problem = path_problem(folder)
    if problem is not None:
        logger.warning("agent folder %s is not served: %s", folder, problem)
    return problem is None


def _directory_folder(slug: str) -> Path | None:
    if not is_valid_slug(slug):
        return None
    folder = agents_dir() / slug
    return folder if (folder / "agent").is_dir() and _inside_agents_dir(folder) else None


def get_agent(slug: str) -> Agent | None:
    """The agent served under ``/<slug>/``, or None if there is none."""
    # Unordered: the slug is unique, and ordering one row is most of the query's cost to build.
    # A tenant's request reads its own agents and the shared ones (another tenant's is
    # hidden by visible_to anyway); anything else, the platform's map of every slug.
    with rls.tenant_or_platform_scope():
        return served_row(slug, _agent_with_slug(slug))


def _agent_with_slug(slug: str) -> Agent | None:
    """The ``Agent`` row with this slug. Every request under ``/<slug>/`` that names no
    session reads it, so on Postgres the query is written out (``agent_platform.rows``)."""
    if connection.vendor != "postgresql":
        return next(iter(Agent.objects.filter(slug=slug).order_by()[:1]), None)
    with connection.cursor() as cursor:
        cursor.execute(_agent_with_slug_sql(), [slug])
        row = cursor.fetchone()
    return instance(Agent, row) if row is not None else None


@functools.cache
def _agent_with_slug_sql() -> str:
    return f"SELECT {columns(Agent, 'a')} FROM {Agent._meta.db_table} a WHERE a.slug = %s"  # noqa: S608


def served_row(slug: str, row: Agent | None) -> Agent | None:
    """``row``, the ``Agent`` row with this slug read by the caller (None: there is none),
    if it is served: a deployed agent, or a folder of ``AGENTS_DIR`` (registered on first
    sight, its path kept up to date); None for a row whose folder has gone."""
    if row is not None and row.source == AgentSource.DEPLOYMENT:
        # Its tree is its active revision, whatever the row's path says; none: not served yet.
        return row if row.active_revision_id is not None else None
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
    return visible_to(get_agent(slug), tenant)


def visible_to(agent: Agent | None, tenant: Tenant | None) -> Agent | None:
    """``agent`` if ``tenant`` may see it (see ``get_visible_agent``), else None."""
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


# --- discovered surfaces -------------------------------------------------------------------


@dataclass
class _Discovered:
    fingerprint: tuple[int, int, int]
    surface: AgentSurface
    loader: TreeLoader | SandboxLoader


def is_sandboxed(agent: Agent) -> bool:
    """Whether the agent's tree is imported and run in the sandbox (``agents.sandbox``), not
    in this process: a tenant's deployment (untrusted), or every agent with
    ``PLATFORM["SANDBOX"] = "always"``; none with ``"off"`` (dev mode only)."""
    mode = platform_settings.SANDBOX
    if mode not in ("untrusted", "always", "off") or (mode == "off" and not platform_settings.DEV):
        raise ImproperlyConfigured(f'PLATFORM["SANDBOX"] = {mode!r}: use "untrusted", "always" or, in dev mode, "off"')
    if mode == "always":
        return True
    if mode == "off":
        return False
    return agent.source == AgentSource.DEPLOYMENT


def _discover(agent: Agent, folder: Path) -> tuple[AgentSurface, TreeLoader | SandboxLoader]:
    policy = outbound_policy()
    if not is_sandboxed(agent):
        return discover(folder, agent.slug, outbound=policy)
    return sandboxed_surface(
        folder,
        agent.slug,
        outbound=policy.allow,
        secrets=lambda names: resolve_many(names, agent=agent),  # looked up at each runner start and call
        tags={"agent_slug": agent.slug, "tenant_id": agent.tenant_id},
    )


# By folder for shared agents, by "revision:<id>" for deployed ones.
_surfaces: dict[str, _Discovered] = {}
_surfaces_lock = threading.Lock()
# The event types the surfaces above subscribe to (``subscribed_event_types``), worked out
# again only after one of them changes: every append asks, and a shared process holds many.
_subscribed: frozenset[str] | None = None


def _keep(key: str, discovered: _Discovered) -> None:
    """Keep a newly discovered surface. Call holding ``_surfaces_lock``."""
    global _subscribed  # the cache of what the kept surfaces subscribe to is stale now
    _surfaces[key] = discovered
    _subscribed = None


class NotDeployed(LookupError):
    """A deployed agent with no revision to serve (none active, none given)."""


def surface_for(agent: Agent, revision_id: str | None = None) -> AgentSurface:
    """The agent's discovered surface. A shared agent's is discovered once per process,
    in dev mode again whenever a file under its folder changes. A deployed agent's is
    that of ``revision_id`` (a session's) or else of its active revision, discovered once
    per process and revision (a revision never changes), so activating another is seen
    by every process at its next call.

    Raises:
        NotDeployed: a deployed agent with neither.
    """
    if agent.source == AgentSource.DEPLOYMENT:
        return _revision_surface(agent, revision_id or agent.active_revision_id)
    folder = Path(agent.path)
    with _surfaces_lock:
        cached = _surfaces.get(agent.path)
        if cached is not None and not platform_settings.DEV:
            return cached.surface
        fingerprint = tree_fingerprint(folder)
        if cached is not None and cached.fingerprint == fingerprint:
            return cached.surface
        surface, loader = _discover(agent, folder)
        if cached is not None:
            cached.loader.unload()
        _keep(agent.path, _Discovered(fingerprint, surface, loader))
    _log_diagnostics(agent, surface)
    return surface


def surface_for_session(session: Any) -> AgentSurface:
    """The surface a session's turns run on: its agent's, at the revision it started on."""
    return surface_for(session.agent, session.revision_id)


def _revision_surface(agent: Agent, revision_id: str | None) -> AgentSurface:
    from agents.deployments import revision_folder  # imports this module's models' neighbours

    if revision_id is None:
        raise NotDeployed(f"agent {agent.slug!r} has no active deployment")
    key = f"revision:{revision_id}"
    with _surfaces_lock:
        cached = _surfaces.get(key)
    if cached is not None:
        return cached.surface
    revision = Revision.objects.get(pk=revision_id, agent_id=agent.pk)
    folder = revision_folder(revision)
    with _surfaces_lock:
        cached = _surfaces.get(key)
        if cached is not None:
            return cached.surface
        surface, loader = _discover(agent, folder)
        _keep(key, _Discovered((0, 0, 0), surface, loader))
    _log_diagnostics(agent, surface)
    return surface


def _log_diagnostics(agent: Agent, surface: AgentSurface) -> None:
    tags = {"agent_slug": agent.slug, "tenant_id": agent.tenant_id}  # shown by /<slug>/v1/logs
    if surface.errors:
        logger.error(
            "agent %r is not served: %s",
            agent.slug,
            "; ".join(str(diagnostic) for diagnostic in surface.errors),
            extra=tags,
        )
    for warning in (d for d in surface.all_diagnostics() if not d.is_error):
        logger.warning("agent %r: %s", agent.slug, warning, extra=tags)


def subscribed_event_types() -> frozenset[str]:
    """The event types that some hook, channel ``events`` handler or webhook of an agent
    discovered in this process handles (``"*"``: every type). Lets the event log skip looking up
    the session of an event nobody here listens to."""
    global _subscribed  # worked out once per change of the surfaces (see ``_keep``)
    with _surfaces_lock:
        if _subscribed is None:
            _subscribed = _event_types_of(cached.surface for cached in _surfaces.values())
        return _subscribed


def _event_types_of(surfaces: Iterable[AgentSurface]) -> frozenset[str]:
    found: set[str] = set()
    for surface in surfaces:
        for hook in surface.hooks.values():
            found.update(hook.value.events or {})
        for channel in surface.channels.values():
            found.update(channel.value.events or {})
        for webhook in surface.config.webhooks:
            found.update(webhook.events)
    return frozenset(found)
