"""Every error text of the FileSystem contract, exactly, in one place."""

from __future__ import annotations

import pytest

from agents.runtime.fs import (
    FileSystemError,
    HostFileSystem,
    MemoryFileStore,
    MemoryFileSystem,
    OverlayFileSystem,
    UnionFileSystem,
)
from agents.runtime.fs.tools import replace_in_file


async def _not_found() -> None:
    await MemoryFileSystem().read("/a/b.md")


async def _write_failed() -> None:
    await MemoryFileSystem({"/a": "file"}).write("/a/b.md", b"")


async def _etag_mismatch() -> None:
    fs = HostFileSystem(MemoryFileStore())
    await fs.write("/a/b.md", b"1")
    await fs.write("/a/b.md", b"2", etag="stale")


async def _read_only() -> None:
    await OverlayFileSystem([MemoryFileSystem()]).write("/a/b.md", b"")


async def _no_mount() -> None:
    await UnionFileSystem([("/data", MemoryFileSystem())]).read("/a/b.md")


async def _invalid_pattern() -> None:
    await MemoryFileSystem().grep("a(b")


async def _edit(old: str, new: str) -> None:
    await replace_in_file(MemoryFileSystem({"/a/b.md": "one one"}), "/a/b.md", old, new)


CASES = [
    (_not_found, "not found: /a/b.md"),
    (_write_failed, "write failed: /a/b.md"),
    (_etag_mismatch, "write failed: /a/b.md"),
    (_read_only, "read-only mount: /a/b.md"),
    (_no_mount, "no mount for path: /a/b.md"),
    (_invalid_pattern, "invalid grep pattern: a(b"),
    (lambda: _edit("", "x"), "oldText is empty"),
    (lambda: _edit("one", "one"), "oldText and newText are exactly the same"),
    (lambda: _edit("two", "x"), "The string to replace was not found in the file"),
    (
        lambda: _edit("one", "x"),
        "The string to replace was found multiple times in the file. Use replace_all to replace all occurrences, "
        "or include more context to only edit one occurrence.",
    ),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("scenario", "text"), CASES, ids=[text[:30] for _, text in CASES])
async def test_error_text(scenario, text):
    with pytest.raises(FileSystemError) as raised:
        await scenario()
    assert str(raised.value) == text
    assert raised.value.message == text
