"""Extensions: trees laid out like ``agent/`` that other agents mount under a namespace.

``extensions/<ns>.py`` holds a ``mount(...)`` (a package or a folder) or a
``plugin_mount(path=...)``. A mount folder ``extensions/<ns>/`` holds the same in
``extension.py`` and may override a contribution by dropping a file of the same
name beside it, or remove one with ``disable_tool("name")`` and its siblings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from agents.sdk._errors import DefinitionError

ContributionKind = Literal[
    "tool", "skill", "connection", "hook", "channel", "schedule", "subagent", "instructions", "ab", "artifacts"
]


@dataclass(frozen=True)
class ExtensionSpec:
    """``extension.py`` at the root of an extension's tree: what it is and its config schema."""

    name: str | None = None
    description: str | None = None
    config: type[BaseModel] | None = None


def define_extension(
    *, name: str | None = None, description: str | None = None, config: type[BaseModel] | None = None
) -> ExtensionSpec:
    """Describe an extension; ``config`` is a pydantic model that mounts are validated against.

    Raises:
        DefinitionError: when ``config`` is not a pydantic model class.
    """
    if config is not None and not (isinstance(config, type) and issubclass(config, BaseModel)):
        raise DefinitionError(f"config must be a pydantic model class, not {config!r}")
    return ExtensionSpec(name, description, config)


@dataclass(frozen=True)
class Disable:
    """Remove one contribution of a mounted extension (by its name inside the extension)."""

    kind: ContributionKind
    name: str


@dataclass(frozen=True)
class Mount:
    """Mount a package (an entry point of ``agent_platform.extensions`` or an importable
    package) or a folder (a path, relative to the mount file)."""

    source: str
    config: Mapping[str, Any] = field(default_factory=dict)
    disable: tuple[Disable, ...] = ()


def mount(source: str, *, config: Mapping[str, Any] | None = None, disable: Sequence[Disable] = ()) -> Mount:
    """Mount an extension: ``mount("crm_tools", config={"region": "eu"}, disable=[disable_tool("refund")])``.

    Raises:
        DefinitionError: for an empty source or a disable that is not ``disable_*()``.
    """
    if not source.strip():
        raise DefinitionError("mount() needs a package name or a folder path")
    for item in disable:
        if not isinstance(item, Disable):
            raise DefinitionError(f"disable= takes disable_tool(...) and its siblings, not {item!r}")
    return Mount(source.strip(), dict(config or {}), tuple(disable))


@dataclass(frozen=True)
class PluginMount:
    """Mount a plugin folder (``plugin.json`` with ``skills/``, ``commands/``, ``agents/``, ``mcp.json``)."""

    path: str
    disable: tuple[Disable, ...] = ()


def plugin_mount(*, path: str, disable: Sequence[Disable] = ()) -> PluginMount:
    """Mount a Claude- or Cursor-style plugin folder (path relative to the mount file)."""
    if not path.strip():
        raise DefinitionError("plugin_mount() needs path=")
    return PluginMount(path.strip(), tuple(disable))


def disable_tool(name: str) -> Disable:
    return Disable("tool", name)


def disable_skill(name: str) -> Disable:
    return Disable("skill", name)


def disable_connection(name: str) -> Disable:
    return Disable("connection", name)


def disable_hook(name: str) -> Disable:
    return Disable("hook", name)


def disable_channel(name: str) -> Disable:
    return Disable("channel", name)


def disable_schedule(name: str) -> Disable:
    return Disable("schedule", name)


def disable_subagent(name: str) -> Disable:
    return Disable("subagent", name)


def disable_instructions() -> Disable:
    return Disable("instructions", "instructions")


def disable_ab(name: str) -> Disable:
    return Disable("ab", name)


def disable_artifacts() -> Disable:
    return Disable("artifacts", "artifacts")
