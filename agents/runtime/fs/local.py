"""A real directory as a FileSystem: the host default over the session workspace."""

from __future__ import annotations

import asyncio
import builtins
import os
import shutil
import stat as stat_module
import tempfile
from pathlib import Path

from agents.runtime.fs.base import (
    FileInfo,
    FileSystem,
    NotFoundError,
    PathError,
    WriteFailedError,
    by_path,
    is_utf8,
    join,
    normalize,
)


class LocalFileSystem(FileSystem):
    """The directory ``root_dir`` seen as ``/``.

    Nothing outside the root is reachable: ``..`` is collapsed by ``normalize`` before the
    path touches the disk, and every path is resolved (symlinks included) and refused
    unless it lands inside the root. A symlink that leads out is not listed, reads as
    ``not found`` and cannot be written through (``write failed``). Only regular files
    are read, so a FIFO in the workspace cannot block a turn.

    Raises:
        ValueError: when ``root_dir`` is not a directory.
    """

    def __init__(self, root_dir: Path | str) -> None:
        if not os.path.isdir(root_dir):
            raise ValueError(f"LocalFileSystem root {str(root_dir)!r} is not a directory")
        self.root = os.path.realpath(root_dir)

    def _inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root + os.sep)

    def _literal(self, norm: str) -> str:
        return os.path.join(self.root, *norm.strip("/").split("/")) if norm != "/" else self.root

    def _resolve(self, norm: str, error: type[PathError]) -> str:
        """The real path of ``norm`` after following symlinks, or ``error`` when it leaves the root."""
        real = os.path.realpath(self._literal(norm))
        if not self._inside(real):
            raise error(norm)
        return real

    def _info(self, norm: str, real: str) -> FileInfo | None:
        try:
            status = os.stat(real)
        except OSError:
            return None
        if stat_module.S_ISDIR(status.st_mode):
            return FileInfo(norm, is_dir=True)
        if stat_module.S_ISREG(status.st_mode):
            return FileInfo(norm, is_dir=False, size=status.st_size)
        return None

    def _entry(self, directory: str, name: str, literal: str) -> FileInfo | None:
        if not is_utf8(name):
            return None  # a name that is not UTF-8 could not be named back (or logged)
        real = os.path.realpath(literal)
        if not self._inside(real):
            return None
        return self._info(join(directory, name), real)

    # --- blocking halves, run in a thread -----------------------------------------

    def _read(self, norm: str) -> bytes:
        real = self._resolve(norm, NotFoundError)
        info = self._info(norm, real)
        if info is None or info.is_dir:
            raise NotFoundError(norm)
        try:
            with open(real, "rb") as handle:
                return handle.read()
        except OSError:
            raise NotFoundError(norm) from None

    def _write(self, norm: str, data: bytes) -> None:
        if norm == "/":
            raise WriteFailedError(norm)
        real = self._resolve(norm, WriteFailedError)
        try:
            os.makedirs(os.path.dirname(real), exist_ok=True)
            # The directories just made may have raced with a symlink; check again.
            real = self._resolve(norm, WriteFailedError)
            if os.path.isdir(real):
                raise WriteFailedError(norm)
            # Write beside the target and rename, so a reader never sees half a file.
            handle, temporary = tempfile.mkstemp(dir=os.path.dirname(real), prefix=".fs-write-")
            try:
                with os.fdopen(handle, "wb") as stream:
                    stream.write(data)
                os.replace(temporary, real)
            except OSError:
                os.unlink(temporary)
                raise
        except OSError:
            raise WriteFailedError(norm) from None

    def _delete(self, norm: str) -> None:
        if norm == "/":
            raise WriteFailedError(norm)
        real = self._resolve(norm, NotFoundError)
        literal = self._literal(norm)
        try:
            if os.path.islink(literal):
                os.unlink(literal)  # the link goes, not what it points at
            elif os.path.isdir(real):
                shutil.rmtree(real)
            elif os.path.lexists(real):
                os.unlink(real)
            else:
                raise NotFoundError(norm)
        except OSError:
            raise WriteFailedError(norm) from None

    def _list(self, norm: str) -> builtins.list[FileInfo]:
        real = self._resolve(norm, NotFoundError)
        if not os.path.isdir(real):
            raise NotFoundError(norm)
        entries: list[FileInfo] = []
        try:
            with os.scandir(real) as scan:
                for item in scan:
                    entry = self._entry(norm, item.name, item.path)
                    if entry is not None:
                        entries.append(entry)
        except OSError:
            raise NotFoundError(norm) from None
        return by_path(entries)

    def _stat(self, norm: str) -> FileInfo:
        info = self._info(norm, self._resolve(norm, NotFoundError))
        if info is None:
            raise NotFoundError(norm)
        return info

    def _walk(self, norm: str) -> builtins.list[FileInfo]:
        top = self._stat(norm)
        if not top.is_dir:
            return []
        real = self._resolve(norm, NotFoundError)
        entries: list[FileInfo] = []
        # followlinks=False: a symlinked directory is listed but not entered, so a link
        # back up the tree cannot loop.
        for directory, dirnames, filenames in os.walk(real, followlinks=False):
            relative = os.path.relpath(directory, real)
            base = norm if relative == "." else join(norm, relative.replace(os.sep, "/"))
            for name in dirnames + filenames:
                entry = self._entry(base, name, os.path.join(directory, name))
                if entry is not None:
                    entries.append(entry)
        return by_path(entries)

    # --- the contract -------------------------------------------------------------

    async def read(self, path: str) -> bytes:
        return await asyncio.to_thread(self._read, normalize(path))

    async def write(self, path: str, data: bytes) -> None:
        await asyncio.to_thread(self._write, normalize(path), bytes(data))

    async def delete(self, path: str) -> None:
        await asyncio.to_thread(self._delete, normalize(path))

    async def list(self, path: str = "/") -> builtins.list[FileInfo]:
        return await asyncio.to_thread(self._list, normalize(path))

    async def stat(self, path: str) -> FileInfo:
        return await asyncio.to_thread(self._stat, normalize(path))

    async def walk(self, path: str = "/") -> builtins.list[FileInfo]:
        return await asyncio.to_thread(self._walk, normalize(path))
