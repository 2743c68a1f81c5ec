"""The host APIs authored code reaches through ``ctx.host``, backed by the database.

``kv`` keeps JSON values per key for one agent inside one tenant. ``files`` keeps
files per session (the default) or agent-wide (``scope="deployment"``); a write
that passes the ``etag`` it read replaces the file only if nobody changed it since.
Names resolve inside the caller's tenant and agent, so one tenant can never name
another's keys or files. ``reminders`` is bound to the session (None without one:
``sessions_app.triggers.reminders``). ``otel`` counts, records and sets span attributes
(no-ops unless the agent exports: ``sessions_app.telemetry``). ``mcp`` calls the agent's MCP
connections (``agents.runtime.mcp``). ``slack`` and ``github`` are the packs' API clients
(None when the agent has no such channel).
"""

from __future__ import annotations

import builtins
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async as in_thread
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet

from agents.config import mcp_connections
from agents.discovery import AgentSurface
from agents.models import Agent
from agents.registry import surface_for
from agents.runtime.fs.base import NotFoundError, WriteFailedError, normalize
from agents.runtime.fs.host import StoreEntry
from agents.runtime.mcp.connections import McpConnections
from agents.sdk import SessionInfo
from agents.sdk.memory import MEMORY_DIR
from agents.telemetry import checked_attributes, set_attributes
from sessions_app import quotas
from sessions_app.models import ABAssignment, FileScope, KVEntry, Session, StoredFile
from sessions_app.telemetry import agent_telemetry
from sessions_app.triggers.github_progress import github_client_for
from sessions_app.triggers.reminders import SessionReminders
from sessions_app.triggers.slack_api import slack_client_for


class DatabaseKV:
    """``ctx.host.kv``."""

    def __init__(self, tenant_id: int, agent_id: int) -> None:
        self._tenant_id, self._agent_id = tenant_id, agent_id

    @property
    def _rows(self) -> QuerySet[KVEntry]:
        # Built on use: every turn makes a host, few turns use it.
        return KVEntry.objects.filter(tenant_id=self._tenant_id, agent_id=self._agent_id)

    async def get(self, key: str, default: Any = None) -> Any:
        row = await in_thread(self._rows.filter(key=key).first)()
        return default if row is None else row.value

    async def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``.

        Raises:
            ValueError: when ``value`` is not JSON (nothing is stored then).
        """
        try:
            size = len(json.dumps(value))
        except (TypeError, ValueError) as problem:
            raise ValueError(f"the value for {key!r} is not JSON: {problem}") from problem
        await in_thread(self._put)(key, value, size)

    def _put(self, key: str, value: Any, size: int) -> None:
        with transaction.atomic():
            quotas.admit_bytes(self._tenant_id, size)  # the tenant's stored bytes (413 past them)
            KVEntry.objects.update_or_create(
                tenant_id=self._tenant_id, agent_id=self._agent_id, key=key, defaults={"value": value}
            )

    async def delete(self, key: str) -> None:
        await in_thread(self._rows.filter(key=key).delete)()

    async def list(self, prefix: str = "") -> builtins.list[str]:
        keys = self._rows.filter(key__startswith=prefix).order_by("key").values_list("key", flat=True)
        return await in_thread(lambda: builtins.list(keys))()


class DatabaseFileStore:
    """Stored files of one scope: a session's, or the agent's (``session_id`` None).

    A ``FileStore`` (``agents.runtime.fs.host``): the storage behind ``ctx.host.files``
    and behind ``host_fs()`` roots.
    """

    def __init__(self, tenant_id: int, agent_id: int, session_id: str | None) -> None:
        scope = FileScope.SESSION if session_id else FileScope.DEPLOYMENT
        # The scope too: deployment files and artifact contents both have no session.
        self._owner = {"tenant_id": tenant_id, "agent_id": agent_id, "session_id": session_id, "scope": scope}
        self._tenant_id = tenant_id

    @property
    def _rows(self) -> QuerySet[StoredFile]:
        # Built on use: every turn makes its stores, few turns use them.
        return StoredFile.objects.filter(**self._owner)

    async def read(self, path: str) -> tuple[bytes, str]:
        """The content and etag.

        Raises:
            NotFoundError: ``not found: PATH``.
        """
        path = normalize(path)
        row = await in_thread(self._rows.filter(path=path).first)()
        if row is None:
            raise NotFoundError(path)
        return bytes(row.content), row.etag

    async def write(self, path: str, data: bytes, etag: str | None = None) -> str:
        """Write the file; with ``etag``, only if the stored file still has it. Returns the new etag.

        Raises:
            WriteFailedError: ``write failed: PATH`` when ``etag`` does not match.
        """
        return await in_thread(self._write)(normalize(path), data, etag)

    def _write(self, path: str, data: bytes, etag: str | None) -> str:
        new_etag = secrets.token_hex(16)
        fields = {"content": data, "size": len(data), "etag": new_etag}
        try:
            with transaction.atomic():
                quotas.admit_bytes(self._tenant_id, len(data))  # the tenant's stored bytes
                row = self._rows.select_for_update().filter(path=path).first()
                if etag is not None and (row is None or row.etag != etag):
                    raise WriteFailedError(path)
                if row is None:
                    StoredFile.objects.create(path=path, **self._owner, **fields)
                else:
                    self._rows.filter(pk=row.pk).update(**fields)
        except IntegrityError:  # created by a concurrent writer between our read and insert
            raise WriteFailedError(path) from None
        return new_etag

    async def delete(self, path: str) -> None:
        path = normalize(path)
        deleted, _ = await in_thread(self._rows.filter(path=path).delete)()
        if not deleted:
            raise NotFoundError(path)

    async def list(self, prefix: str = "/") -> builtins.list[StoreEntry]:
        """Every file below the directory ``prefix``, at any depth, sorted by path."""
        prefix = normalize(prefix)
        start = prefix if prefix.endswith("/") else prefix + "/"
        query = self._rows if prefix == "/" else self._rows.filter(path__startswith=start)
        rows = query.order_by("path").values_list("path", "size", "etag")
        return [StoreEntry(path, size, etag) for path, size, etag in await in_thread(lambda: builtins.list(rows))()]


# What a new workspace's memory/ may hold at most; files past it (by path order) are left out.
MEMORY_MAX_BYTES = 8 * 1024 * 1024


def memory_files(tenant_id: int, agent_id: int) -> dict[str, bytes]:
    """The agent's deployment-scoped files under ``memory/`` in this tenant, as workspace
    paths (``{"memory/journal.md": b"..."}``), for a new session workspace (``agents.sdk.memory``)."""
    found: dict[str, bytes] = {}
    total = 0
    for path, size, content in _memory_rows(tenant_id, agent_id):
        total += size
        if total > MEMORY_MAX_BYTES:
            break
        found[path.lstrip("/")] = bytes(content)
    return found


def _memory_rows(tenant_id: int, agent_id: int) -> list[tuple[str, int, bytes | memoryview]]:
    """(path, size, content) of the agent's memory files, in path order. Every new session
    reads them, so on Postgres the query is written out (``agent_platform.rows``)."""
    prefix = f"/{MEMORY_DIR}/"
    if connection.vendor != "postgresql":
        query = StoredFile.objects.filter(tenant_id=tenant_id, agent_id=agent_id, session_id=None)
        return list(query.filter(path__startswith=prefix).order_by("path").values_list("path", "size", "content"))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT path, size, content FROM {StoredFile._meta.db_table} "  # noqa: S608
            "WHERE tenant_id = %s AND agent_id = %s AND session_id IS NULL AND starts_with(path, %s) ORDER BY path",
            [tenant_id, agent_id, prefix],
        )
        return list(cursor.fetchall())


class HostFiles:
    """``ctx.host.files``: session scope by default, ``scope="deployment"`` agent-wide."""

    def __init__(self, session: DatabaseFileStore | None, deployment: DatabaseFileStore) -> None:
        self._stores = {"session": session, "deployment": deployment}

    def _store(self, scope: str) -> DatabaseFileStore:
        if scope not in self._stores:
            raise ValueError(f"scope must be 'session' or 'deployment', not {scope!r}")
        store = self._stores[scope]
        if store is None:
            raise ValueError("there is no session here: use scope='deployment'")
        return store

    async def read(self, path: str, *, scope: str = "session") -> tuple[bytes, str]:
        return await self._store(scope).read(path)

    async def write(self, path: str, content: bytes | str, *, etag: str | None = None, scope: str = "session") -> str:
        data = content.encode() if isinstance(content, str) else content
        return await self._store(scope).write(path, data, etag)

    async def list(self, prefix: str = "/", *, scope: str = "session") -> builtins.list[str]:
        return [entry.path for entry in await self._store(scope).list(prefix)]

    async def delete(self, path: str, *, scope: str = "session") -> None:
        await self._store(scope).delete(path)


# The platform's own metrics live under these names; an agent's may not.
PLATFORM_METRIC_PREFIXES = ("cursor.", "agent_sdk.", "gen_ai.")


class HostOtel:
    """``ctx.host.otel``: the agent's own metrics and span attributes (DESIGN.md §9.9),
    no-ops when the agent exports nothing. Every point carries ``agent_sdk.agent``."""

    def __init__(self, surface: AgentSurface) -> None:
        self._agent = surface.slug
        self._telemetry = agent_telemetry(surface)

    def _attributes(self, name: str, attributes: Mapping[str, Any] | None) -> dict[str, Any]:
        if not isinstance(name, str) or not name or name.startswith(PLATFORM_METRIC_PREFIXES):
            raise ValueError(
                f"{name!r} is not a metric name an agent may use (not empty, not {PLATFORM_METRIC_PREFIXES})"
            )
        return {**checked_attributes(attributes or {}), "agent_sdk.agent": self._agent}

    def increment(self, name: str, value: float = 1, attributes: Mapping[str, Any] | None = None) -> None:
        """Add ``value`` to the counter ``name``.

        Raises:
            ValueError: a name of the platform's own (``cursor.*``, ``agent_sdk.*``), attributes
                OpenTelemetry cannot carry, or too many instruments.
        """
        points = self._attributes(name, attributes)
        if self._telemetry is not None:
            self._telemetry.add(name, value, points, authored=True)

    def record(self, name: str, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        """Record ``value`` in the histogram ``name``.

        Raises:
            ValueError: as ``increment``.
        """
        points = self._attributes(name, attributes)
        if self._telemetry is not None:
            self._telemetry.record(name, value, points, authored=True)

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Add attributes to the span the code runs in: the tool call's, else the turn's.

        Raises:
            ValueError: as ``increment``.
        """
        checked = checked_attributes(attributes)
        if self._telemetry is not None:
            set_attributes(checked)


@dataclass
class PlatformHost:
    """What ``ctx.host`` is for a session."""

    kv: DatabaseKV
    files: HostFiles
    otel: HostOtel
    mcp: McpConnections | None = None  # the agent's MCP connections, both kinds (agents.runtime.mcp)
    reminders: SessionReminders | None = None
    slack: Any = None  # the Slack pack's API client (triggers.slack_api), None without one
    github: Any = None  # the GitHub pack's client (sessions_app.triggers.github_api), None without it


def session_arms(session: Session) -> dict[str, str]:
    """``ctx.session.abs``: the session's A/B arms, ``{experiment: arm}``."""
    return dict(ABAssignment.objects.filter(session=session).values_list("experiment", "arm"))


def session_info(session: Session, arms: Mapping[str, str] | None = None) -> SessionInfo:
    """What authored code (tools, hooks, commits) is told about its session; ``arms``:
    its A/B arms when the caller has read them already."""
    return SessionInfo(
        id=session.pk,
        agent=session.agent.slug,
        mode=session.mode,
        purpose=session.purpose,
        dry_run=session.dry_run,
        channel=session.channel,
        title=session.title,
        abs=dict(arms) if arms is not None else session_arms(session),
    )


def host_for(session: Session) -> PlatformHost:
    """The host APIs for code running in ``session`` (its tenant and agent)."""
    return host_for_agent(
        session.tenant_id, session.agent, session.pk, channel=session.channel, revision_id=session.revision_id
    )


def host_for_agent(
    tenant_id: int,
    agent: Agent,
    session_id: str | None = None,
    *,
    channel: str | None = None,
    revision_id: str | None = None,
) -> PlatformHost:
    """The host APIs for an agent inside a tenant; without a session, ``files`` has
    only the deployment scope (the session scope refuses every call) and there are no
    ``reminders``."""
    deployment = DatabaseFileStore(tenant_id, agent.pk, None)
    surface = surface_for(agent, revision_id)  # once, for the packs' clients (a session's revision)
    session_store = DatabaseFileStore(tenant_id, agent.pk, session_id) if session_id else None
    return PlatformHost(
        kv=DatabaseKV(tenant_id, agent.pk),
        files=HostFiles(session_store, deployment),
        otel=HostOtel(surface),
        mcp=mcp_connections(agent, surface),
        slack=slack_client_for(agent, surface),
        reminders=SessionReminders(session_id) if session_id else None,
        github=github_client_for(agent, surface, channel),
    )
