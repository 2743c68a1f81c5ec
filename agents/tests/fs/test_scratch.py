"""The per-turn /tmp scratch mount lies over the root and is dropped when the turn ends."""

from __future__ import annotations

import pytest

from agents.runtime.fs import FileSystemError, MemoryFileSystem, UnionFileSystem, with_turn_scratch


@pytest.mark.asyncio
async def test_tmp_goes_to_the_scratch_and_everything_else_to_the_root():
    root = MemoryFileSystem({"/notes.md": "n"})
    fs, _ = with_turn_scratch(root)
    await fs.write("/tmp/work.txt", b"scratch")
    await fs.write("/kept.md", b"k")
    assert await fs.read("/tmp/work.txt") == b"scratch"
    assert not await root.exists("/tmp/work.txt")
    assert await root.read("/kept.md") == b"k"
    assert [entry.path for entry in await fs.list("/")] == ["/kept.md", "/notes.md", "/tmp"]


@pytest.mark.asyncio
async def test_the_scratch_hides_what_the_root_has_under_tmp():
    root = MemoryFileSystem({"/tmp/old.txt": "from the root"})
    fs, _ = with_turn_scratch(root)
    assert await fs.glob("/tmp/**") == []
    with pytest.raises(FileSystemError, match=r"^not found: /tmp/old\.txt$"):
        await fs.read("/tmp/old.txt")


@pytest.mark.asyncio
async def test_the_scratch_is_dropped_after_the_turn():
    root = MemoryFileSystem()
    fs, drop = with_turn_scratch(root)
    await fs.write("/tmp/work.txt", b"scratch")
    drop()
    with pytest.raises(FileSystemError, match=r"^not found: /tmp/work\.txt$"):
        await fs.read("/tmp/work.txt")
    next_turn, _ = with_turn_scratch(root)
    assert await next_turn.list("/tmp") == []


@pytest.mark.asyncio
async def test_each_turn_gets_its_own_scratch():
    root = MemoryFileSystem()
    first = with_turn_scratch(root)
    second = with_turn_scratch(root)
    await first.fs.write("/tmp/a", b"1")
    assert not await second.fs.exists("/tmp/a")


@pytest.mark.asyncio
async def test_a_root_without_a_slash_mount_keeps_its_no_mount_errors():
    root = UnionFileSystem([("/data", MemoryFileSystem())])
    fs, _ = with_turn_scratch(root)
    await fs.write("/tmp/x", b"")
    with pytest.raises(FileSystemError, match=r"^no mount for path: /other$"):
        await fs.read("/other")
    assert [entry.path for entry in await fs.list("/")] == ["/data", "/tmp"]
