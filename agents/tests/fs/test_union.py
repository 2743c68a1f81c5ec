"""union_fs: longest-prefix routing on whole segments, prefixes stripped and added back,
mount points as directories, shadowing, and ``no mount for path``."""

from __future__ import annotations

import pytest

from agents.runtime.fs import FileInfo, FileSystemError, MemoryFileSystem, UnionFileSystem


def _three_mounts() -> tuple[UnionFileSystem, MemoryFileSystem, MemoryFileSystem, MemoryFileSystem]:
    root = MemoryFileSystem({"/x": "root x", "/database/x": "root database x"})
    data = MemoryFileSystem({"/x": "data x"})
    deep = MemoryFileSystem({"/x": "deep x"})
    # Declared shortest first: the order must not decide which prefix is longest.
    return UnionFileSystem([("/", root), ("/data", data), ("/data/deep", deep)]), root, data, deep


@pytest.mark.asyncio
async def test_the_longest_matching_prefix_wins():
    fs, _, _, _ = _three_mounts()
    assert await fs.read("/x") == b"root x"
    assert await fs.read("/data/x") == b"data x"
    assert await fs.read("/data/deep/x") == b"deep x"


@pytest.mark.asyncio
async def test_prefixes_match_whole_path_segments():
    fs, _, _, _ = _three_mounts()
    assert await fs.read("/database/x") == b"root database x"


@pytest.mark.asyncio
async def test_the_prefix_is_stripped_going_in():
    fs, root, data, deep = _three_mounts()
    await fs.write("/data/new.txt", b"n")
    await fs.write("/data/deep/sub/new.txt", b"d")
    assert await data.read("/new.txt") == b"n"
    assert await deep.read("/sub/new.txt") == b"d"
    assert not await root.exists("/data/new.txt")


@pytest.mark.asyncio
async def test_the_prefix_is_added_coming_out():
    fs, _, data, _ = _three_mounts()
    await data.write("/sub/a.md", b"hello")
    assert [entry.path for entry in await fs.list("/data/sub")] == ["/data/sub/a.md"]
    assert await fs.glob("/data/**/*.md") == ["/data/sub/a.md"]
    assert [(match.path, match.line_number) for match in await fs.grep("hello", path="/data")] == [
        ("/data/sub/a.md", 1)
    ]
    assert await fs.stat("/data/sub/a.md") == FileInfo("/data/sub/a.md", is_dir=False, size=5)


@pytest.mark.asyncio
async def test_errors_name_the_path_the_caller_used():
    fs, _, _, _ = _three_mounts()
    with pytest.raises(FileSystemError, match=r"^not found: /data/deep/missing$"):
        await fs.read("/data/deep/missing")
    with pytest.raises(FileSystemError, match=r"^write failed: /data/x/below$"):
        await fs.write("/data/x/below", b"")
    with pytest.raises(FileSystemError, match=r"^write failed: /data$"):
        await fs.write("/data", b"")


@pytest.mark.asyncio
async def test_mount_points_show_as_directories_above_the_mounts():
    fs = UnionFileSystem([("/docs", MemoryFileSystem()), ("/data/sets", MemoryFileSystem({"/a.csv": "1"}))])
    assert await fs.list("/") == [FileInfo("/data", is_dir=True), FileInfo("/docs", is_dir=True)]
    assert await fs.list("/data") == [FileInfo("/data/sets", is_dir=True)]
    assert await fs.glob("/*") == ["/data", "/docs"]
    assert await fs.glob("**") == ["/data", "/data/sets", "/data/sets/a.csv", "/docs"]
    assert (await fs.stat("/")).is_dir
    assert (await fs.stat("/data")).is_dir


@pytest.mark.asyncio
async def test_a_mount_point_shadows_what_the_outer_mount_has_at_that_path():
    root = MemoryFileSystem({"/data": "a file where the mount is", "/keep.txt": "k"})
    fs = UnionFileSystem([("/", root), ("/data", MemoryFileSystem({"/in.txt": "i"}))])
    assert await fs.list("/") == [FileInfo("/data", is_dir=True), FileInfo("/keep.txt", is_dir=False, size=1)]
    assert await fs.read("/data/in.txt") == b"i"


@pytest.mark.asyncio
async def test_the_outer_mount_files_under_a_mount_point_are_hidden_in_list_and_glob():
    root = MemoryFileSystem({"/data/hidden.txt": "unreachable", "/top.txt": "t"})
    fs = UnionFileSystem([("/", root), ("/data", MemoryFileSystem({"/seen.txt": "s"}))])
    assert await fs.glob("**/*.txt") == ["/data/seen.txt", "/top.txt"]
    assert [entry.path for entry in await fs.list("/data")] == ["/data/seen.txt"]
    assert [entry.path for entry in await fs.walk("/")] == ["/data", "/data/seen.txt", "/top.txt"]
    assert [match.path for match in await fs.grep(".")] == ["/data/seen.txt", "/top.txt"]


@pytest.mark.asyncio
async def test_an_earlier_mount_shadows_a_later_one_with_the_same_path():
    first = MemoryFileSystem({"/same.md": "first", "/only-first.md": "1"})
    second = MemoryFileSystem({"/same.md": "second", "/only-second.md": "2"})
    fs = UnionFileSystem([("/docs", first), ("/docs", second)])
    assert await fs.read("/docs/same.md") == b"first"
    assert await fs.list("/docs") == [
        FileInfo("/docs/only-first.md", is_dir=False, size=1),
        FileInfo("/docs/same.md", is_dir=False, size=5),
    ]
    assert await fs.glob("/docs/*") == ["/docs/only-first.md", "/docs/same.md"]


@pytest.mark.asyncio
@pytest.mark.parametrize("operation", ["read", "write", "delete", "list", "stat", "grep"])
async def test_a_path_no_mount_covers(operation):
    fs = UnionFileSystem([("/data", MemoryFileSystem({"/a": "a"}))])
    calls = {
        "read": lambda: fs.read("/database/a"),
        "write": lambda: fs.write("/database/a", b""),
        "delete": lambda: fs.delete("/database/a"),
        "list": lambda: fs.list("/database/a"),
        "stat": lambda: fs.stat("/database/a"),
        "grep": lambda: fs.grep("a", path="/database/a"),
    }
    with pytest.raises(FileSystemError) as raised:
        await calls[operation]()
    assert str(raised.value) == "no mount for path: /database/a"
    assert not await fs.exists("/database/a")
    assert await fs.glob("/database/*") == []


@pytest.mark.asyncio
async def test_a_missing_path_inside_a_mount_is_not_found_not_no_mount():
    fs = UnionFileSystem([("/data", MemoryFileSystem())])
    with pytest.raises(FileSystemError, match=r"^not found: /data/nothing$"):
        await fs.list("/data/nothing")
    assert await fs.list("/data") == []


@pytest.mark.asyncio
async def test_unions_nest():
    inner = UnionFileSystem([("/b", MemoryFileSystem({"/f": "nested"}))])
    fs = UnionFileSystem([("/a", inner)])
    assert await fs.read("/a/b/f") == b"nested"
    assert await fs.glob("**") == ["/a", "/a/b", "/a/b/f"]
    with pytest.raises(FileSystemError, match=r"^no mount for path: /a/c$"):
        await fs.read("/a/c")
