"""From an agent's ``root`` declaration (``agents.sdk`` specs) to a runtime FileSystem."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from agents.runtime.fs.base import FileSystem, normalize
from agents.runtime.fs.compose import OverlayFileSystem, UnionFileSystem
from agents.runtime.fs.host import FileStore, HostFileSystem
from agents.runtime.fs.local import LocalFileSystem
from agents.runtime.fs.memory import EmptyFileSystem, MemoryFileSystem
from agents.sdk._fs import EmptyFS, FileSystemSpec, HostFS, OverlayFS, TempFS, UnionFS


def build_filesystem(
    spec: FileSystemSpec | None,
    *,
    workspace_dir: Path | None = None,
    file_store_for: Callable[[str], FileStore] | None = None,
    key: str = "root",
) -> FileSystem:
    """The FileSystem a session's file tools work on.

    ``spec`` is the agent's ``root``, already evaluated when it was a factory of the
    session (the caller does that, with the session). Without a root the session
    workspace directory is the file system; a ``temp_fs`` is a folder of the workspace
    (``key`` tells mounts apart). ``host_fs(scope=...)`` gets its store from
    ``file_store_for(scope)``. Example::

        build_filesystem(union_fs({"/": temp_fs(), "/shared": host_fs(scope="deployment")}),
                         file_store_for=stores.for_scope)

    Raises:
        ValueError: no root and no ``workspace_dir``, or a ``host_fs`` and no ``file_store_for``.
        TypeError: ``spec`` is not a FileSystem declaration (e.g. an unevaluated factory).
    """
    match spec:
        case None:
            if workspace_dir is None:
                raise ValueError("an agent without a root needs the session workspace directory")
            return LocalFileSystem(workspace_dir)
        case EmptyFS():
            return EmptyFileSystem()
        case TempFS(files=files):
            return _temp(files, workspace_dir, key)
        case HostFS(scope=scope, read_only=read_only):
            if file_store_for is None:
                raise ValueError(f"host_fs(scope={scope!r}) needs a file store, and none was given")
            return HostFileSystem(file_store_for(scope), read_only=read_only)
        case UnionFS(mounts=mounts):
            return UnionFileSystem(
                [
                    (prefix, _build(mount, workspace_dir, file_store_for, f"{key}.{n}"))
                    for n, (prefix, mount) in enumerate(mounts)
                ]
            )
        case OverlayFS(layers=layers):
            return OverlayFileSystem(
                [_build(layer, workspace_dir, file_store_for, f"{key}.{n}") for n, layer in enumerate(layers)]
            )
    raise TypeError(f"root must be a FileSystem declaration (temp_fs(), union_fs(...), ...), not {spec!r}")


def _build(
    spec: FileSystemSpec, workspace_dir: Path | None, file_store_for: Callable[[str], FileStore] | None, key: str
) -> FileSystem:
    return build_filesystem(spec, workspace_dir=workspace_dir, file_store_for=file_store_for, key=key)


def _temp(files: Mapping[str, str], workspace_dir: Path | None, key: str) -> FileSystem:
    """A ``temp_fs`` lives as long as the session: a folder of the session workspace,
    seeded the first time. Without a workspace (a bare in-process run) it is in memory."""
    if workspace_dir is None:
        return MemoryFileSystem(files)
    folder = workspace_dir / ".temp_fs" / key
    if not folder.exists():
        for path, text in files.items():
            target = folder / normalize(path).lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        folder.mkdir(parents=True, exist_ok=True)
    return LocalFileSystem(folder)
