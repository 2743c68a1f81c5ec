"""The write side of the FileSystem contract, for every writable kind (memory, local, host, union)."""

from __future__ import annotations

import pytest

from agents.runtime.fs import FileSystemError
from agents.tests.fs.trees import FILES


@pytest.mark.asyncio
async def test_write_then_read_and_overwrite(writable_tree):
    fs = await writable_tree(FILES)
    await fs.write("/docs/new.md", b"first")
    await fs.write("docs/./new.md", b"second")
    assert await fs.read("/docs/new.md") == b"second"


@pytest.mark.asyncio
async def test_write_creates_the_directories_above(writable_tree):
    fs = await writable_tree(FILES)
    await fs.write("/src/deep/er/file.py", b"x = 1\n")
    assert [entry.path for entry in await fs.list("/src/deep")] == ["/src/deep/er"]
    assert (await fs.stat("/src/deep/er")).is_dir


@pytest.mark.asyncio
async def test_listing_is_sorted_by_path_whatever_the_write_order(writable_tree):
    fs = await writable_tree({})
    for name in ["c.md", "B.md", "a.md", "a0.md"]:
        await fs.write(f"/docs/{name}", b"")
    assert [entry.path for entry in await fs.list("/docs")] == ["/docs/B.md", "/docs/a.md", "/docs/a0.md", "/docs/c.md"]
    assert await fs.glob("/docs/*.md") == ["/docs/B.md", "/docs/a.md", "/docs/a0.md", "/docs/c.md"]


@pytest.mark.asyncio
async def test_write_below_a_file_fails(writable_tree):
    fs = await writable_tree(FILES)
    with pytest.raises(FileSystemError) as raised:
        await fs.write("/docs/readme.md/inside", b"x")
    assert str(raised.value) == "write failed: /docs/readme.md/inside"


@pytest.mark.asyncio
async def test_write_onto_a_directory_fails(writable_tree):
    fs = await writable_tree(FILES)
    with pytest.raises(FileSystemError, match=r"^write failed: /src/lib$"):
        await fs.write("/src/lib", b"x")
    with pytest.raises(FileSystemError, match=r"^write failed: /$"):
        await fs.write("/", b"x")


@pytest.mark.asyncio
async def test_delete_a_file(writable_tree):
    fs = await writable_tree(FILES)
    await fs.delete("/src/app.py")
    assert not await fs.exists("/src/app.py")
    with pytest.raises(FileSystemError, match=r"^not found: /src/app\.py$"):
        await fs.read("/src/app.py")


@pytest.mark.asyncio
async def test_delete_a_directory_takes_everything_in_it(writable_tree):
    fs = await writable_tree(FILES)
    await fs.delete("/docs/guide")
    assert not await fs.exists("/docs/guide/intro.md")
    assert [entry.path for entry in await fs.list("/docs")] == ["/docs/readme.md"]


@pytest.mark.asyncio
async def test_delete_of_nothing_is_not_found(writable_tree):
    fs = await writable_tree(FILES)
    with pytest.raises(FileSystemError) as raised:
        await fs.delete("docs/missing.md")
    assert str(raised.value) == "not found: /docs/missing.md"


@pytest.mark.asyncio
async def test_delete_of_the_root_fails(writable_tree):
    fs = await writable_tree(FILES)
    with pytest.raises(FileSystemError, match=r"^write failed: /$"):
        await fs.delete("/")
    assert await fs.exists("/notes.txt")


@pytest.mark.asyncio
async def test_dot_dot_never_climbs_above_the_root(writable_tree):
    fs = await writable_tree({})
    await fs.write("../../../notes.txt", b"kept inside")
    assert await fs.read("/notes.txt") == b"kept inside"
