"""The contract suite's tree and a builder of it for every FileSystem kind.

The union kind spreads the tree over three mounts of three different kinds, so
prefix stripping and re-prefixing are on every path the suite touches; the overlay
kind splits it over two layers with decoys underneath that must never show.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from agents.runtime.fs import (
    FileSystem,
    HostFileSystem,
    LocalFileSystem,
    MemoryFileStore,
    MemoryFileSystem,
    OverlayFileSystem,
    UnionFileSystem,
)

TreeFactory = Callable[[Mapping[str, bytes]], Awaitable[FileSystem]]

# Every path lives under /docs or /src except /notes.txt, so the union kind can mount
# /docs and /src separately and / for the rest.
FILES: dict[str, bytes] = {
    "/docs/readme.md": b"# Title\nhello world\n",
    "/docs/guide/intro.md": b"intro line\nHello again\nhello twice hello\n",
    "/src/app.py": b"import os\nprint('hello')\n",
    "/src/lib/util.py": b"def util():\n    return 1\n",
    "/src/blob.bin": b"\x00hello binary",
    "/notes.txt": b"top-level hello\n",
}


async def _fill(fs: FileSystem, files: Mapping[str, bytes]) -> FileSystem:
    for path, data in files.items():
        await fs.write(path, data)
    return fs


def _local(root: Path) -> LocalFileSystem:
    root.mkdir(parents=True, exist_ok=True)
    return LocalFileSystem(root)


def builders(tmp_path: Path) -> dict[str, TreeFactory]:
    async def memory(files: Mapping[str, bytes]) -> FileSystem:
        return MemoryFileSystem(files)

    async def local(files: Mapping[str, bytes]) -> FileSystem:
        return await _fill(_local(tmp_path / "local"), files)

    async def host(files: Mapping[str, bytes]) -> FileSystem:
        return await _fill(HostFileSystem(MemoryFileStore()), files)

    async def union(files: Mapping[str, bytes]) -> FileSystem:
        fs = UnionFileSystem(
            [
                ("/docs", MemoryFileSystem()),
                ("/src", _local(tmp_path / "union-src")),
                ("/", HostFileSystem(MemoryFileStore())),
            ]
        )
        return await _fill(fs, files)

    async def overlay(files: Mapping[str, bytes]) -> FileSystem:
        # The top layer has every other file; the bottom one has the rest, plus a decoy
        # for each top file that must never show through.
        paths = sorted(files)
        top = {path: files[path] for path in paths[::2]}
        bottom = {path: files[path] for path in paths[1::2]} | {path: b"decoy\n" for path in top}
        return OverlayFileSystem([MemoryFileSystem(top), MemoryFileSystem(bottom)])

    return {"memory": memory, "local": local, "host": host, "union": union, "overlay": overlay}


WRITABLE = ["memory", "local", "host", "union"]
KINDS = [*WRITABLE, "overlay"]
