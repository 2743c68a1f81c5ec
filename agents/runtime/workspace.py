"""The session workspace: a directory with ``AGENTS.md`` (the instructions),
``.skills/<name>/SKILL.md``, the agent's seed files, the files sent with messages and
``memory/`` (the agent's notes from earlier sessions, ``agents.sdk.memory``, read-only).
``AGENTS.md``, ``.skills/`` and ``memory/`` are the platform's: a sent file may not take
those names (it would replace the agent's instructions, skills or memory)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from agents.discovery import AgentSurface
from agents.runtime.fs.base import FileSystem
from agents.runtime.fs.compose import OverlayFileSystem, UnionFileSystem
from agents.runtime.fs.local import LocalFileSystem
from agents.sdk.memory import MEMORY_DIR

RESERVED_TOP = MEMORY_DIR
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
    directory: Path,
    surface: AgentSurface,
    instructions: str,
    files: Mapping[str, str] | None = None,
    memory: Mapping[str, bytes] | None = None,
) -> list[str]:
    """Create or refresh the workspace; returns the relative paths of the files in it.

    ``memory`` (``{"memory/journal.md": b"..."}``) replaces what ``memory/`` holds; None
    leaves it as it is (a session's memory is what it was when its workspace was made).

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
    if memory is not None:
        _write_memory(directory / RESERVED_TOP, memory)
    written += _memory_files(directory)
    return sorted(set(written))


def _memory_folder(directory: Path) -> Path | None:
    """The workspace's ``memory/`` when it is a real folder of the workspace (code run in
    the workspace could have put a file or a symlink there)."""
    folder = directory / RESERVED_TOP
    if folder.is_symlink() or not folder.is_dir():
        return None
    return folder


def _write_memory(folder: Path, memory: Mapping[str, bytes]) -> None:
    """Replace ``folder`` with ``memory``'s files, each read-only (0444). A stored name
    that cannot be a file here (a file and a folder of the same name, too long) is left out."""
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)
    if memory:
        folder.mkdir(parents=True)
    for relative, data in sorted(memory.items()):
        parts = relative.split("/")
        if parts[0] != RESERVED_TOP or len(parts) < 2 or any(part in {"", ".", ".."} for part in parts):
            continue
        target = folder.joinpath(*parts[1:])
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(0o444)
        except OSError:
            continue


def _memory_files(directory: Path) -> list[str]:
    folder = _memory_folder(directory)
    if folder is None:
        return []
    return sorted(
        os.path.relpath(os.path.join(top, name), directory).replace(os.sep, "/")
        for top, _, names in os.walk(folder)
        for name in names
    )


def with_memory(root: FileSystem, workspace: Path | None) -> FileSystem:
    """``root`` with the workspace's ``memory/`` mounted read-only at ``/memory`` (writes
    there are ``read-only mount: PATH``), when the workspace has one."""
    folder = _memory_folder(workspace) if workspace is not None else None
    if folder is None:
        return root
    notes = OverlayFileSystem([LocalFileSystem(folder)])
    return UnionFileSystem([(f"/{RESERVED_TOP}", notes), ("/", root)])
