"""FileSystem declarations for ``define_agent(root=...)``.

These describe the tree; the platform builds the real file system for each
session from them and synthesizes the file tools (``Read``, ``LS``, ``Grep``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agents.sdk._errors import DefinitionError


@dataclass(frozen=True)
class FileSystemSpec:
    """Base of every FileSystem declaration."""


@dataclass(frozen=True)
class EmptyFS(FileSystemSpec):
    """No files at all."""


@dataclass(frozen=True)
class TempFS(FileSystemSpec):
    """A scratch tree per session, optionally seeded with ``files``."""

    files: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HostFS(FileSystemSpec):
    """Stored files (``ctx.host.files``), per session or agent-wide."""

    scope: Literal["session", "deployment"] = "session"
    read_only: bool = False


@dataclass(frozen=True)
class UnionFS(FileSystemSpec):
    """Mounts by path prefix; the longest matching prefix wins, earlier mounts shadow later ones."""

    mounts: tuple[tuple[str, FileSystemSpec], ...]


@dataclass(frozen=True)
class OverlayFS(FileSystemSpec):
    """Layers read top-down (earlier wins); read-only."""

    layers: tuple[FileSystemSpec, ...]


def _normalize_prefix(prefix: str) -> str:
    if not prefix.startswith("/"):
        raise DefinitionError(f"mount prefix {prefix!r} must be an absolute path such as '/data'")
    parts = [part for part in prefix.split("/") if part]
    if any(part in {".", ".."} for part in parts):
        raise DefinitionError(f"mount prefix {prefix!r} must not contain '.' or '..'")
    return "/" + "/".join(parts)


def empty_fs() -> EmptyFS:
    """A file system with nothing in it."""
    return EmptyFS()


def temp_fs(files: Mapping[str, str] | None = None) -> TempFS:
    """A per-session scratch tree, seeded with ``{path: text}``."""
    return TempFS(dict(files or {}))


def host_fs(*, scope: Literal["session", "deployment"] = "session", read_only: bool = False) -> HostFS:
    """The platform's stored files, for this session or shared by the whole agent.

    Raises:
        DefinitionError: for another scope.
    """
    if scope not in ("session", "deployment"):
        raise DefinitionError(f"host_fs scope must be 'session' or 'deployment', not {scope!r}")
    return HostFS(scope, read_only)


def union_fs(mounts: Mapping[str, FileSystemSpec] | Sequence[tuple[str, FileSystemSpec]]) -> UnionFS:
    """Mount file systems at path prefixes: ``union_fs({"/": temp_fs(), "/docs": host_fs()})``.

    Raises:
        DefinitionError: for a relative or repeated prefix, or a mount that is not a FileSystem.
    """
    items = list(mounts.items()) if isinstance(mounts, Mapping) else list(mounts)
    if not items:
        raise DefinitionError("union_fs needs at least one mount")
    normalized: list[tuple[str, FileSystemSpec]] = []
    for prefix, spec in items:
        if not isinstance(spec, FileSystemSpec):
            raise DefinitionError(f"the mount at {prefix!r} is not a FileSystem: {spec!r}")
        normalized.append((_normalize_prefix(prefix), spec))
    prefixes = [prefix for prefix, _ in normalized]
    if len(set(prefixes)) != len(prefixes):
        raise DefinitionError(f"union_fs mounts repeat a prefix: {prefixes!r}")
    return UnionFS(tuple(normalized))


def overlay_fs(*layers: FileSystemSpec) -> OverlayFS:
    """Stack file systems; a path is read from the first layer that has it.

    Raises:
        DefinitionError: for no layers or a layer that is not a FileSystem.
    """
    if not layers:
        raise DefinitionError("overlay_fs needs at least one layer")
    for layer in layers:
        if not isinstance(layer, FileSystemSpec):
            raise DefinitionError(f"overlay layer {layer!r} is not a FileSystem")
    return OverlayFS(tuple(layers))
