"""host_fs over a FileStore: etag compare-and-swap, read-only mounts, the store protocol."""

from __future__ import annotations

import pytest

from agents.runtime.fs import FileSystemError, HostFileSystem, MemoryFileStore, StoreEntry


@pytest.mark.asyncio
async def test_a_write_with_the_current_etag_replaces_the_file():
    store = MemoryFileStore()
    etag = await store.write("/notes.md", b"v1")
    new_etag = await store.write("/notes.md", b"v2", etag=etag)
    assert new_etag != etag
    assert await store.read("/notes.md") == (b"v2", new_etag)


@pytest.mark.asyncio
async def test_a_write_with_a_stale_etag_fails_and_keeps_the_file():
    store = MemoryFileStore()
    stale = await store.write("/notes.md", b"v1")
    await store.write("/notes.md", b"someone else")
    with pytest.raises(FileSystemError) as raised:
        await store.write("/notes.md", b"mine", etag=stale)
    assert str(raised.value) == "write failed: /notes.md"
    assert (await store.read("/notes.md"))[0] == b"someone else"


@pytest.mark.asyncio
async def test_a_write_with_an_etag_needs_the_file_to_exist():
    store = MemoryFileStore()
    with pytest.raises(FileSystemError, match=r"^write failed: /new\.md$"):
        await store.write("/new.md", b"x", etag="anything")


@pytest.mark.asyncio
async def test_the_host_file_system_passes_etags_through():
    fs = HostFileSystem(MemoryFileStore())
    first = await fs.write_versioned("/a/b.md", b"one")
    data, etag = await fs.read_versioned("a/./b.md")
    assert (data, etag) == (b"one", first)
    await fs.write("/a/b.md", b"two", etag=etag)
    with pytest.raises(FileSystemError, match=r"^write failed: /a/b\.md$"):
        await fs.write("/a/b.md", b"three", etag=etag)
    assert await fs.read("/a/b.md") == b"two"


@pytest.mark.asyncio
async def test_a_read_only_host_file_system_refuses_writes_and_deletes():
    store = MemoryFileStore()
    await store.write("/shared.md", b"s")
    fs = HostFileSystem(store, read_only=True)
    assert await fs.read("/shared.md") == b"s"
    with pytest.raises(FileSystemError) as raised:
        await fs.write("/shared.md", b"x")
    assert str(raised.value) == "read-only mount: /shared.md"
    with pytest.raises(FileSystemError, match=r"^read-only mount: /shared\.md$"):
        await fs.delete("/shared.md")


@pytest.mark.asyncio
async def test_the_store_lists_a_directory_at_any_depth_sorted_by_path():
    store = MemoryFileStore()
    for path in ["/b/2", "/a/x/1", "/a/0", "/ab"]:
        await store.write(path, b"xy")
    assert [entry.path for entry in await store.list("/a")] == ["/a/0", "/a/x/1"]
    assert [entry.path for entry in await store.list()] == ["/a/0", "/a/x/1", "/ab", "/b/2"]
    assert await store.list("/ab") == []
    assert await store.list("b/") == [StoreEntry("/b/2", 2, (await store.read("/b/2"))[1])]


@pytest.mark.asyncio
async def test_the_store_deletes_one_file():
    store = MemoryFileStore()
    await store.write("/ab", b"x")
    await store.delete("/ab")
    with pytest.raises(FileSystemError, match=r"^not found: /ab$"):
        await store.delete("/ab")
    with pytest.raises(FileSystemError, match=r"^not found: /ab$"):
        await store.read("/ab")


@pytest.mark.asyncio
async def test_the_host_file_system_does_not_read_contents_to_list_or_stat():
    class CountingStore(MemoryFileStore):
        reads = 0

        async def read(self, path):
            self.reads += 1
            return await super().read(path)

    store = CountingStore()
    fs = HostFileSystem(store)
    await fs.write("/docs/a.md", b"abc")
    store.reads = 0
    assert (await fs.stat("/docs/a.md")).size == 3
    assert [entry.size for entry in await fs.list("/docs")] == [3]
    assert await fs.glob("**/*.md") == ["/docs/a.md"]
    assert store.reads == 0
