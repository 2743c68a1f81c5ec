"""The session workspace: a directory with ``AGENTS.md`` (the instructions),
``.skills/<name>/SKILL.md``, the agent's seed files and the files sent with
messages. ``AGENTS.md``, ``.skills/`` and ``memory/`` are the platform's: a sent file may
not take those names (it would replace the agent's instructions or skills)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

from agents.discovery import AgentSurface

RESERVED_TOP = "memory"
# First path segments the platform writes itself (see ``prepare_workspace``), compared
# without case so that a case-insensitive file system cannot be used to replace them.
RESERVED_NAMES = ("AGENTS.md", ".skills", RESERVED_TOP)


class WorkspacePathError(ValueError):
    """A file path that may not be written into the workspace."""


def normalize_workspace_path(path: str) -> str:
    """A relative posix path inside the workspace, for a path a caller sent.

    ``./memory/x`` and ``a/../memory/x`` are both ``memory/x`` and refused.

    Raises:
        WorkspacePathError: for an empty path, a NUL byte, a path leaving the
            workspace, or one taking a reserved name (``RESERVED_NAMES``).
    """
    raw = path.replace("\\", "/")
    if not raw or "\x00" in raw or raw.startswith("/"):
        raise WorkspacePathError(f"invalid workspace path {path!r}: use a relative path")
    parts: list[str] = []
    for part in raw.split("/"):
        if part in {"", "."}:
            continue
        if part == "..":
            if not parts:
                raise WorkspacePathError(f"workspace path {path!r} leaves the workspace")
            parts.pop()
        else:
            parts.append(part)
    if not parts:
        raise WorkspacePathError(f"invalid workspace path {path!r}")
    if parts[0] == RESERVED_TOP:
        raise WorkspacePathError(f"workspace path {path!r} is under the reserved {RESERVED_TOP}/")
    if parts[0].casefold() in {name.casefold() for name in RESERVED_NAMES}:
        raise WorkspacePathError(
            f"workspace path {path!r} is reserved: the platform writes the agent's {parts[0]} itself"
        )
    return "/".join(parts)


def prepare_workspace(
    directory: Path, surface: AgentSurface, instructions: str, files: Mapping[str, str] | None = None
) -> list[str]:
    """Create or refresh the workspace; returns the relative paths of the files in it.

    Raises:
        WorkspacePathError: for a sent file path that is refused (nothing is written then).
    """
    sent = {normalize_workspace_path(path): content for path, content in (files or {}).items()}
    directory.mkdir(parents=True, exist_ok=True)
    written: list[str] = []

    def put(relative: str, data: bytes) -> None:
        target = directory / relative
        written.append(relative)
        # Each turn refreshes the same files: rewrite only what changed (a read is cheaper than a write).
        with contextlib.suppress(OSError):
            if target.read_bytes() == data:
                return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    put("AGENTS.md", instructions.encode())
    for name, entry in surface.skills.items():
        skill = f"---\ndescription: {entry.value.description}\n---\n{entry.value.body}\n"
        put(f".skills/{name}/SKILL.md", skill.encode())
    for relative, source in surface.seeds.items():
        put(relative, Path(source).read_bytes())
    for relative, content in sent.items():
        put(relative, content.encode())
    return sorted(set(written))
