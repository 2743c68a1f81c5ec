"""An agent's discovered surface: every slot's definitions, where each came from,
and the diagnostics. ``info()`` is the document of ``GET /v1/info`` and
``agent info --json``."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from croniter import CroniterError, croniter

from agents import sdk
from agents.discovery.diagnostics import Diagnostic
from agents.runtime.fs.tools import FILE_TOOL_NAMES

T = TypeVar("T")

FILE_TOOLS = frozenset(FILE_TOOL_NAMES)


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A definition and where it came from: its file, and the extension that contributed it."""

    value: T
    path: Path
    extension: str | None = None


@dataclass(frozen=True)
class SkillDoc:
    """A skill as discovered: the catalog line and the body loaded on demand."""

    description: str
    body: str
    source: str = "skill"  # "skill" | "command" (from a plugin's commands/)


@dataclass(frozen=True)
class InstructionPart:
    text: str | None
    render: Any = None


@dataclass
class ExtensionInfo:
    """One mount: where it came from, its validated config, and what it contributed."""

    namespace: str
    kind: str  # "extension" | "plugin"
    source: str
    path: Path | None
    config: dict[str, Any] = field(default_factory=dict)
    description: str | None = None
    package: dict[str, str] | None = None  # {"name", "version"}: the pip package behind an entry point
    contributed: dict[str, list[str]] = field(default_factory=dict)
    disabled: list[str] = field(default_factory=list)
    overridden: list[str] = field(default_factory=list)

    def context(self) -> sdk.ExtensionContext:
        """``ctx.extension`` for one call: a fresh copy of the config each time, so a
        handler that changes it changes nothing for the next one."""
        return sdk.ExtensionContext(self.namespace, copy.deepcopy(self.config))


def extension_context(extensions: Mapping[str, ExtensionInfo], namespace: str | None) -> sdk.ExtensionContext | None:
    """``ctx.extension`` for a contribution of mount ``namespace`` (None: the agent's own code)."""
    info = extensions.get(namespace) if namespace is not None else None
    return info.context() if info is not None else None


@dataclass
class AgentSurface:
    """Everything discovery found in one agent tree."""

    slug: str
    path: Path
    config: sdk.AgentConfig = field(default_factory=sdk.AgentConfig)
    instructions: list[Entry[InstructionPart]] = field(default_factory=list)
    tools: dict[str, Entry[sdk.Tool]] = field(default_factory=dict)
    skills: dict[str, Entry[SkillDoc]] = field(default_factory=dict)
    mcp_connections: dict[str, Entry[sdk.McpConnection]] = field(default_factory=dict)
    host_connections: dict[str, Entry[sdk.McpConnection]] = field(default_factory=dict)
    subagents: dict[str, AgentSurface] = field(default_factory=dict)
    extensions: dict[str, ExtensionInfo] = field(default_factory=dict)
    channels: dict[str, Entry[sdk.Channel]] = field(default_factory=dict)
    hooks: dict[str, Entry[sdk.Hook]] = field(default_factory=dict)
    schedules: dict[str, Entry[sdk.Schedule]] = field(default_factory=dict)
    experiments: dict[str, Entry[sdk.Experiment]] = field(default_factory=dict)
    ab_config: sdk.ABConfig | None = None
    artifacts: sdk.ArtifactsConfig | None = None
    result: sdk.ResultHandler | None = None
    storage: sdk.StorageConfig | None = None
    otel: sdk.OtelConfig | None = None
    seeds: dict[str, Path] = field(default_factory=dict)
    playground_tools: dict[str, Path] = field(default_factory=dict)
    evals: dict[str, Entry[sdk.EvalCase]] = field(default_factory=dict)
    evals_config: sdk.EvalsConfig | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.all_diagnostics() if d.is_error]

    def all_diagnostics(self) -> list[Diagnostic]:
        """This tree's diagnostics and its subagents', in discovery order."""
        found = list(self.diagnostics)
        for child in self.subagents.values():
            found += child.all_diagnostics()
        return found

    def pack_channel(self, kind: str, preferred: str | None = None) -> tuple[str, sdk.Channel] | None:
        """The channel of pack ``kind`` with its name: ``preferred`` (a session's channel)
        when it is one, else the first in discovery order; None when there is none."""
        found = [(name, e.value) for name, e in self.channels.items() if e.value.pack and e.value.pack.kind == kind]
        return next((pair for pair in found if pair[0] == preferred), found[0] if found else None)

    def info(self, default_model: str) -> dict[str, Any]:
        """The JSON document describing this agent (``GET /v1/info``)."""
        model = self.config.model or default_model
        return {
            "agent": self.slug,
            "model": model,
            "testModel": model == "test",
            "description": self.config.description,
            "maxRunningTurns": self.config.max_running_turns,
            "instructions": [_source(entry) for entry in self.instructions],
            "tools": [_tool_info(name, entry) for name, entry in self.tools.items()],
            "skills": [
                {"name": name, "description": e.value.description, "source": e.value.source, "extension": e.extension}
                for name, e in self.skills.items()
            ],
            "mcpConnections": [_connection_info(name, e) for name, e in self.mcp_connections.items()],
            "hostConnections": [_connection_info(name, e) for name, e in self.host_connections.items()],
            "subagents": [
                {
                    "id": name,
                    "description": child.config.description,
                    "model": child.config.model or model,
                    "tools": list(child.tools),
                    "skills": list(child.skills),
                }
                for name, child in self.subagents.items()
            ],
            "channels": [_channel_info(self.slug, name, e) for name, e in self.channels.items()],
            "schedules": [_schedule_info(name, e) for name, e in self.schedules.items()],
            "hooks": [
                {"name": name, "events": list(e.value.events), "extension": e.extension}
                for name, e in self.hooks.items()
            ],
            "experiments": [
                {
                    "name": name,
                    "arms": list(e.value.arms),
                    "weights": list(e.value.weights),
                    "description": e.value.description,
                    "extension": e.extension,
                }
                for name, e in self.experiments.items()
            ],
            "abConfig": None
            if self.ab_config is None
            else {"enabled": self.ab_config.enabled, "excludePurposes": list(self.ab_config.exclude_purposes)},
            "artifacts": None
            if self.artifacts is None
            else {
                "kinds": dict(self.artifacts.kinds),
                "tagArtifact": self.artifacts.tag_artifact,
                "retentionSeconds": _retention_seconds(self.artifacts.retention),
            },
            "result": self.result is not None,
            "storage": {"kv": self.storage.kv, "files": self.storage.files} if self.storage else None,
            "otel": self.otel is not None and self.otel.enabled,
            "root": type(self.config.root).__name__ if self.config.root is not None else None,
            "extensions": [
                {
                    "namespace": ext.namespace,
                    "kind": ext.kind,
                    "source": ext.source,
                    "description": ext.description,
                    "package": ext.package,
                    "contributions": ext.contributed,
                    "disabled": ext.disabled,
                    "overridden": ext.overridden,
                }
                for ext in self.extensions.values()
            ],
            "workspace": {"seeds": sorted(self.seeds)},
            "playgroundTools": sorted(self.playground_tools),
            "evals": {
                "cases": [
                    {"id": case_id, "description": e.value.description, "tags": list(e.value.tags)}
                    for case_id, e in self.evals.items()
                ],
                "config": None
                if self.evals_config is None
                else {
                    "maxConcurrency": self.evals_config.max_concurrency,
                    "tags": list(self.evals_config.tags),
                    "timeout": self.evals_config.timeout,
                    "model": self.evals_config.model,
                },
            },
            "diagnostics": [d.as_dict() for d in self.all_diagnostics()],
        }


def _retention_seconds(retention: Any) -> int | dict[str, int] | None:
    """``artifacts.retentionSeconds`` of ``/v1/info``: one number, one per kind, or None (kept)."""
    if isinstance(retention, Mapping):
        return {kind: int(value.total_seconds()) for kind, value in retention.items()}
    return int(retention.total_seconds()) if retention is not None else None


def _schedule_info(name: str, entry: Entry[sdk.Schedule]) -> dict[str, Any]:
    schedule = entry.value
    kind = "prompt" if schedule.prompt is not None else "handler"
    return {
        "id": name,
        "cron": schedule.cron,
        "description": schedule.description,
        "kind": kind,
        "nextFireAt": next_fire_at(schedule.cron),
        # Kept from earlier releases: "name" is the id, "runs" the kind.
        "name": name,
        "runs": kind,
        "extension": entry.extension,
    }


def next_fire_at(cron: str) -> str | None:
    """The cron's next fire time after now (UTC, ISO 8601 with Z); None if it never fires."""
    try:
        upcoming = croniter(cron, datetime.now(UTC)).get_next(datetime)
    except (ValueError, KeyError, CroniterError):
        return None
    return upcoming.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _source(entry: Entry[InstructionPart]) -> dict[str, Any]:
    return {"path": entry.path.name, "dynamic": entry.value.render is not None, "extension": entry.extension}


def _tool_info(name: str, entry: Entry[sdk.Tool]) -> dict[str, Any]:
    tool = entry.value
    return {
        "name": name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "execution": tool.execution,
        "effect": tool.effect,
        "needsApproval": "conditional" if callable(tool.needs_approval) else tool.needs_approval,
        "timeout": tool.timeout,
        "extension": entry.extension,
    }


def _connection_info(name: str, entry: Entry[sdk.McpConnection]) -> dict[str, Any]:
    connection = entry.value
    return {
        "name": name,
        "transport": connection.transport,
        "description": connection.description,
        "target": connection.url or connection.command,
        "extension": entry.extension,
    }


def _channel_info(slug: str, name: str, entry: Entry[sdk.Channel]) -> dict[str, Any]:
    routes = [
        {
            "method": route.method,
            "path": route.path,
            "url": f"/{slug}/v1/channels/{name}{route.path}",
            "description": route.description,
            "bodySchema": route.body.model_json_schema() if route.body is not None else None,
        }
        for route in entry.value.routes
    ]
    pack = entry.value.pack
    if pack is not None and pack.path:  # the platform serves a pack's one route itself
        url = f"/{slug}/v1/channels/{name}{pack.path}"
        routes.append(
            {"method": "POST", "path": pack.path, "url": url, "description": pack.description, "bodySchema": None}
        )
    return {
        "name": name,
        "pack": pack.kind if pack is not None else None,
        "routes": routes,
        "events": list(entry.value.events),
        "extension": entry.extension,
    }
