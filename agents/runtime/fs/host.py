"""``host_fs``: the platform's stored files behind a FileSystem.

The storage itself is a ``FileStore``: a flat map from normalised absolute paths
(``/notes/a.md``) to bytes, each version with an opaque etag for compare-and-swap.
The database-backed store (``ctx.host.files``) implements the same protocol;
``MemoryFileStore`` is the in-process one used by tests and the embedded form.
"""

from __future__ import annotations

import builtins
import uuid
from dataclasses import dataclass
from typing import Protocol

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
    parent,
)


@dataclass(frozen=True)
class StoreEntry:
    """One file of a store listing."""

    path: str
    size: int
    etag: str


class FileStore(Protocol):
    """Async storage of files by path. Paths handed in are normalised absolute paths.

    Etags are opaque strings that change with every write.
    """

    async def read(self, path: str) -> tuple[bytes, str]:
        """The content and its etag.

        Raises:
            NotFoundError: no file at the path.
        """
        ...

    async def write(self, path: str, data: bytes, etag: str | None = None) -> str:
        """Store ``data`` and return the new etag. With ``etag``, only replace the version that
        has that etag.

        Raises:
            WriteFailedError: ``etag`` was given and the stored file is missing or has another etag.
        """
        ...

    async def delete(self, path: str) -> None:
        """Remove one file.

        Raises:
            NotFoundError: no file at the path.
        """
        ...

    async def list(self, prefix: str = "/") -> builtins.list[StoreEntry]:
        """Every file below the directory ``prefix`` at any depth, sorted by path: ``list("/a")``
        has ``/a/b`` and ``/a/b/c``, not ``/a`` itself nor ``/ab``; ``list("/")`` has them all."""
        ...


class MemoryFileStore:
    """A ``FileStore`` in a dict."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[bytes, str]] = {}

    async def read(self, path: str) -> tuple[bytes, str]:
        norm = normalize(path)
        try:
            return self._files[norm]
        except KeyError:
            raise NotFoundError(norm) from None

    async def write(self, path: str, data: bytes, etag: str | None = None) -> str:
        norm = normalize(path)
        if etag is not None:
            current = self._files.get(norm)
            if current is None or current[1] != etag:
                raise WriteFailedError(norm)
        new_etag = uuid.uuid4().hex
        self._files[norm] = (bytes(data), new_etag)
        return new_etag

    async def delete(self, path: str) -> None:
        norm = normalize(path)
        if self._files.pop(norm, None) is None:
            raise NotFoundError(norm)

    async def list(self, prefix: str = "/") -> builtins.list[StoreEntry]:
        directory = normalize(prefix)
        return [
            StoreEntry(path, len(data), etag)
            for path, (data, etag) in sorted(self._files.items())
            if path != directory and is_within(path, directory)
        ]


class HostFileSystem(FileSystem):
    """A ``FileStore`` seen as a tree: directories are the path prefixes of stored files.

    ``write`` and ``read_versioned`` expose the store's etags, so callers that hold the
    FileSystem can still compare-and-swap.
    """

    def __init__(self, store: FileStore, *, read_only: bool = False) -> None:
        self.store = store
        self.read_only = read_only

    async def read(self, path: str) -> bytes:
        data, _ = await self.read_versioned(path)
        return data

    async def read_versioned(self, path: str) -> tuple[bytes, str]:
        """The content and its etag.

        Raises:
            NotFoundError: no file at the path.
        """
        return await self.store.read(normalize(path))

    async def write(self, path: str, data: bytes, *, etag: str | None = None) -> None:
        """As ``FileSystem.write``; with ``etag``, only if the stored version still has it.

        Raises:
            WriteFailedError: as ``FileSystem.write``, or on an etag mismatch.
            ReadOnlyError: the file system is read-only.
        """
        await self.write_versioned(path, data, etag=etag)

    async def write_versioned(self, path: str, data: bytes, *, etag: str | None = None) -> str:
        """``write`` returning the new etag."""
        norm = normalize(path)
        if self.read_only:
            raise ReadOnlyError(norm)
        if norm == "/" or await self.store.list(norm):
            raise WriteFailedError(norm)
        for ancestor in ancestors(norm):
            try:
                await self.store.read(ancestor)
            except NotFoundError:
                continue
            raise WriteFailedError(norm)  # a file is where a directory must be
        return await self.store.write(norm, bytes(data), etag)

    async def delete(self, path: str) -> None:
        norm = normalize(path)
        if self.read_only:
            raise ReadOnlyError(norm)
        if norm == "/":
            raise WriteFailedError(norm)
        doomed = [entry.path for entry in await self.store.list(norm)]
        try:
            await self.store.delete(norm)
        except NotFoundError:
            if not doomed:
                raise
        for file in doomed:
            await self.store.delete(file)

    async def list(self, path: str = "/") -> builtins.list[FileInfo]:
        norm = normalize(path)
        entries = await self._below(norm)
        if norm != "/" and not entries:
            raise NotFoundError(norm)
        depth = norm.rstrip("/").count("/") + 1
        return [entry for entry in entries if entry.path.count("/") == depth]

    async def stat(self, path: str) -> FileInfo:
        norm = normalize(path)
        if norm == "/":
            return FileInfo("/", is_dir=True)
        # The file itself is in its parent's listing, with its size, and needs no read.
        for entry in await self.store.list(parent(norm)):
            if entry.path == norm:
                return FileInfo(norm, is_dir=False, size=entry.size)
            if entry.path.startswith(norm + "/"):
                return FileInfo(norm, is_dir=True)
        raise NotFoundError(norm)

    async def walk(self, path: str = "/") -> builtins.list[FileInfo]:
        top = await self.stat(path)
        return await self._below(top.path) if top.is_dir else []

    async def _below(self, norm: str) -> builtins.list[FileInfo]:
        """Files and directories strictly below the directory ``norm``."""
        entries: dict[str, FileInfo] = {}
        for stored in await self.store.list(norm):
            entries[stored.path] = FileInfo(stored.path, is_dir=False, size=stored.size)
            for directory in ancestors(stored.path):
                if directory != norm and is_within(directory, norm):
                    entries.setdefault(directory, FileInfo(directory, is_dir=True))
        return by_path(entries.values())
