"""File systems made of other file systems: ``union_fs`` and ``overlay_fs``."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from agents.runtime.fs.base import (
    FileInfo,
    FileSystem,
    NoMountError,
    NotFoundError,
    PathError,
    ReadOnlyError,
    ancestors,
    by_path,
    is_within,
    normalize,
)

_ABSENT = (NotFoundError, NoMountError)


def _strip(prefix: str, path: str) -> str:
    """``path`` as the mount at ``prefix`` sees it."""
    return path if prefix == "/" else path[len(prefix) :] or "/"


def _unstrip(prefix: str, path: str) -> str:
    """A path the mount at ``prefix`` reported, as the union's caller sees it."""
    if prefix == "/":
        return path
    return prefix if path == "/" else prefix + path


@contextmanager
def _outer_paths(prefix: str) -> Iterator[None]:
    """Re-issue a mount's path errors with the path as the union's caller sees it."""
    try:
        yield
    except PathError as error:
        raise error.at(_unstrip(prefix, error.path)) from None


class UnionFileSystem(FileSystem):
    """Mounts at path prefixes, ``union_fs``.

    A path goes to the mount with the longest prefix that covers it on whole segments
    (``/data`` covers ``/data/x``, not ``/database``); of mounts with the same prefix the
    earlier wins. The prefix is stripped going in and added back to paths and errors
    coming out. ``list``/``walk``/``glob`` show only what a read of the same path would
    reach, so an earlier mount shadows a later one with the same path, and mount points
    (and the directories leading to them) show as directories.

    Raises:
        ValueError: for no mounts.
    """

    def __init__(self, mounts: Sequence[tuple[str, FileSystem]]) -> None:
        if not mounts:
            raise ValueError("a union needs at least one mount")
        self.mounts: tuple[tuple[str, FileSystem], ...] = tuple((normalize(prefix), fs) for prefix, fs in mounts)

    def _route(self, norm: str) -> int | None:
        best: int | None = None
        for index, (prefix, _) in enumerate(self.mounts):
            if is_within(norm, prefix) and (best is None or len(prefix) > len(self.mounts[best][0])):
                best = index
        return best

    def _mount_for(self, norm: str) -> tuple[str, FileSystem]:
        index = self._route(norm)
        if index is None:
            raise NoMountError(norm)
        return self.mounts[index]

    def _mount_dirs_below(self, norm: str) -> set[str]:
        """Mount points strictly below ``norm`` and the directories leading to them."""
        found: set[str] = set()
        for prefix, _ in self.mounts:
            if prefix != norm and is_within(prefix, norm):
                found.update(path for path in [*ancestors(prefix), prefix] if path != norm and is_within(path, norm))
        return found

    def _has_mount_at_or_below(self, norm: str) -> bool:
        return any(is_within(prefix, norm) for prefix, _ in self.mounts)

    def _visible(self, entries: Sequence[FileInfo], prefix: str, index: int) -> builtins.list[FileInfo]:
        """Entries of mount ``index`` re-prefixed, without those a longer or earlier mount shadows."""
        visible: list[FileInfo] = []
        for entry in entries:
            outer = _unstrip(prefix, entry.path)
            if self._route(outer) == index:
                visible.append(FileInfo(outer, entry.is_dir, entry.size))
        return visible

    async def read(self, path: str) -> bytes:
        norm = normalize(path)
        prefix, fs = self._mount_for(norm)
        with _outer_paths(prefix):
            return await fs.read(_strip(prefix, norm))

    async def write(self, path: str, data: bytes) -> None:
        norm = normalize(path)
        prefix, fs = self._mount_for(norm)
        with _outer_paths(prefix):
            await fs.write(_strip(prefix, norm), data)

    async def delete(self, path: str) -> None:
        norm = normalize(path)
        prefix, fs = self._mount_for(norm)
        with _outer_paths(prefix):
            await fs.delete(_strip(prefix, norm))

    async def stat(self, path: str) -> FileInfo:
        norm = normalize(path)
        if self._has_mount_at_or_below(norm):
            return FileInfo(norm, is_dir=True)
        prefix, fs = self._mount_for(norm)
        with _outer_paths(prefix):
            info = await fs.stat(_strip(prefix, norm))
        return FileInfo(norm, info.is_dir, info.size)

    async def list(self, path: str = "/") -> builtins.list[FileInfo]:
        norm = normalize(path)
        depth = norm.rstrip("/").count("/") + 1
        virtual = {directory for directory in self._mount_dirs_below(norm) if directory.count("/") == depth}
        entries: dict[str, FileInfo] = {}
        index = self._route(norm)
        if index is None:
            if not virtual:
                raise NoMountError(norm)
        else:
            prefix, fs = self.mounts[index]
            try:
                with _outer_paths(prefix):
                    listed = await fs.list(_strip(prefix, norm))
            except _ABSENT:
                if not virtual:
                    raise
                listed = []  # nothing there in the mount, but mounts below make it a directory
            entries.update((entry.path, entry) for entry in self._visible(listed, prefix, index))
        entries.update((directory, FileInfo(directory, is_dir=True)) for directory in virtual)
        return by_path(entries.values())

    async def walk(self, path: str = "/") -> builtins.list[FileInfo]:
        norm = normalize(path)
        if not (await self.stat(norm)).is_dir:
            return []
        entries: dict[str, FileInfo] = {}
        covering = self._route(norm)
        for index, (prefix, fs) in enumerate(self.mounts):
            if index == covering:
                inner = _strip(prefix, norm)
            elif prefix != norm and is_within(prefix, norm) and self._route(prefix) == index:
                inner = "/"
            else:
                continue  # covers norm but a longer mount wins, lies elsewhere, or is shadowed
            try:
                with _outer_paths(prefix):
                    walked = await fs.walk(inner)
            except _ABSENT:
                continue
            entries.update((entry.path, entry) for entry in self._visible(walked, prefix, index))
        entries.update((directory, FileInfo(directory, is_dir=True)) for directory in self._mount_dirs_below(norm))
        return by_path(entries.values())


class OverlayFileSystem(FileSystem):
    """Layers read top-down, ``overlay_fs``: a path is what the first layer that has it says,
    listings merge all layers with earlier ones winning, and every write or delete is
    ``read-only mount: PATH``.

    Raises:
        ValueError: for no layers.
    """

    def __init__(self, layers: Sequence[FileSystem]) -> None:
        if not layers:
            raise ValueError("an overlay needs at least one layer")
        self.layers: tuple[FileSystem, ...] = tuple(layers)

    async def _first(self, norm: str) -> tuple[FileSystem, FileInfo]:
        for layer in self.layers:
            try:
                return layer, await layer.stat(norm)
            except _ABSENT:
                if await self._file_above(layer, norm):
                    break  # this layer has a file where the path needs a directory: nothing below shows
        raise NotFoundError(norm)

    @staticmethod
    async def _file_above(layer: FileSystem, norm: str) -> bool:
        for ancestor in reversed(ancestors(norm)):
            try:
                info = await layer.stat(ancestor)
            except _ABSENT:
                continue
            return not info.is_dir
        return False

    async def read(self, path: str) -> bytes:
        norm = normalize(path)
        layer, info = await self._first(norm)
        if info.is_dir:
            raise NotFoundError(norm)
        return await layer.read(norm)

    async def write(self, path: str, data: bytes) -> None:
        raise ReadOnlyError(normalize(path))

    async def delete(self, path: str) -> None:
        raise ReadOnlyError(normalize(path))

    async def stat(self, path: str) -> FileInfo:
        _, info = await self._first(normalize(path))
        return info

    async def list(self, path: str = "/") -> builtins.list[FileInfo]:
        norm = normalize(path)
        _, info = await self._first(norm)
        if not info.is_dir:
            raise NotFoundError(norm)
        merged: dict[str, FileInfo] = {}
        for layer in self.layers:
            try:
                listed = await layer.list(norm)
            except _ABSENT:
                continue
            for entry in listed:
                merged.setdefault(entry.path, entry)
        return by_path(merged.values())

    async def walk(self, path: str = "/") -> builtins.list[FileInfo]:
        norm = normalize(path)
        _, info = await self._first(norm)
        if not info.is_dir:
            return []
        merged: dict[str, FileInfo] = {}
        for layer in self.layers:
            try:
                walked = await layer.walk(norm)
            except _ABSENT:
                continue
            for entry in walked:
                merged.setdefault(entry.path, entry)
        # An earlier layer's file hides a later layer's directory of the same name, and all below it.
        files = {entry.path for entry in merged.values() if not entry.is_dir}
        return by_path(
            entry for entry in merged.values() if not any(ancestor in files for ancestor in ancestors(entry.path))
        )
