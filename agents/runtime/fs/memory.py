"""File systems held in memory: ``empty_fs`` and ``temp_fs``."""

from __future__ import annotations

import builtins
from collections.abc import Mapping

from agents.runtime.fs.base import (
    FileInfo,
    FileSystem,
    NotFoundError,
    ReadOnlyError,
    WriteFailedError,
    ancestors,
    by_path,
    is_within,
    normalize,
)


class EmptyFileSystem(FileSystem):
    """``empty_fs()``: only ``/``, and nothing can be put in it (writes are ``read-only mount``)."""

    async def read(self, path: str) -> bytes:
        raise NotFoundError(normalize(path))

    async def write(self, path: str, data: bytes) -> None:
        raise ReadOnlyError(normalize(path))

    async def delete(self, path: str) -> None:
        raise ReadOnlyError(normalize(path))

    async def list(self, path: str = "/") -> builtins.list[FileInfo]:
        if normalize(path) != "/":
            raise NotFoundError(normalize(path))
        return []

    async def stat(self, path: str) -> FileInfo:
        if normalize(path) != "/":
            raise NotFoundError(normalize(path))
        return FileInfo("/", is_dir=True)


class MemoryFileSystem(FileSystem):
    """``temp_fs(files)``: a tree in a dict, gone with the object.

    Example: ``MemoryFileSystem({"/notes.md": "# Notes"})``; text is stored as UTF-8.

    Raises:
        ValueError: when the seed puts a file where another file needs a directory.
    """

    def __init__(self, files: Mapping[str, bytes | str] | None = None) -> None:
        self._files: dict[str, bytes] = {}
        for path, content in (files or {}).items():
            norm = normalize(path)
            if not self._can_write(norm):
                raise ValueError(f"seed file {path!r} conflicts with another seed file")
            self._files[norm] = content.encode() if isinstance(content, str) else bytes(content)

    def clear(self) -> None:
        self._files.clear()

    def _is_dir(self, norm: str) -> bool:
        if norm == "/":
            return True
        prefix = norm + "/"
        return any(path.startswith(prefix) for path in self._files)

    def _can_write(self, norm: str) -> bool:
        if norm == "/" or self._is_dir(norm):
            return False
        return not any(ancestor in self._files for ancestor in ancestors(norm))

    async def read(self, path: str) -> bytes:
        norm = normalize(path)
        try:
            return self._files[norm]
        except KeyError:
            raise NotFoundError(norm) from None

    async def write(self, path: str, data: bytes) -> None:
        norm = normalize(path)
        if not self._can_write(norm):
            raise WriteFailedError(norm)
        self._files[norm] = bytes(data)

    async def delete(self, path: str) -> None:
        norm = normalize(path)
        if norm == "/":
            raise WriteFailedError(norm)
        if self._files.pop(norm, None) is not None:
            return
        doomed = [file for file in self._files if is_within(file, norm)]
        if not doomed:
            raise NotFoundError(norm)
        for file in doomed:
            del self._files[file]

    async def list(self, path: str = "/") -> builtins.list[FileInfo]:
        norm = normalize(path)
        if not self._is_dir(norm):
            raise NotFoundError(norm)
        return [entry for entry in self._below(norm) if entry.path.count("/") == norm.rstrip("/").count("/") + 1]

    async def stat(self, path: str) -> FileInfo:
        norm = normalize(path)
        if norm in self._files:
            return FileInfo(norm, is_dir=False, size=len(self._files[norm]))
        if self._is_dir(norm):
            return FileInfo(norm, is_dir=True)
        raise NotFoundError(norm)

    async def walk(self, path: str = "/") -> builtins.list[FileInfo]:
        norm = normalize(path)
        if norm in self._files:
            return []
        if not self._is_dir(norm):
            raise NotFoundError(norm)
        return self._below(norm)

    def _below(self, norm: str) -> builtins.list[FileInfo]:
        entries: dict[str, FileInfo] = {}
        for file, data in self._files.items():
            if file == norm or not is_within(file, norm):
                continue
            entries[file] = FileInfo(file, is_dir=False, size=len(data))
            for directory in ancestors(file):
                if directory != norm and is_within(directory, norm):
                    entries.setdefault(directory, FileInfo(directory, is_dir=True))
        return by_path(entries.values())
