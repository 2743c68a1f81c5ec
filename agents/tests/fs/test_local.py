"""LocalFileSystem never reaches outside its root: not through ``..``, not through symlinks."""

from __future__ import annotations

import os

import pytest

from agents.runtime.fs import FileSystemError, LocalFileSystem


@pytest.fixture
def layout(tmp_path):
    """``root/`` is the file system; ``outside/`` holds a secret next to it."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "inside.txt").write_text("inside")
    return root, outside


@pytest.mark.asyncio
async def test_dot_dot_cannot_leave_the_root(layout):
    root, _ = layout
    fs = LocalFileSystem(root)
    with pytest.raises(FileSystemError, match=r"^not found: /outside/secret\.txt$"):
        await fs.read("../outside/secret.txt")
    await fs.write("../../escaped.txt", b"x")
    assert (root / "escaped.txt").read_bytes() == b"x"
    assert not (root.parent / "escaped.txt").exists()


@pytest.mark.asyncio
async def test_a_symlink_to_a_file_outside_is_refused(layout):
    root, outside = layout
    os.symlink(outside / "secret.txt", root / "link.txt")
    fs = LocalFileSystem(root)
    with pytest.raises(FileSystemError) as raised:
        await fs.read("/link.txt")
    assert str(raised.value) == "not found: /link.txt"
    with pytest.raises(FileSystemError, match=r"^write failed: /link\.txt$"):
        await fs.write("/link.txt", b"overwritten")
    assert (outside / "secret.txt").read_text() == "secret"
    assert [entry.path for entry in await fs.list("/")] == ["/inside.txt"]
    assert await fs.glob("**") == ["/inside.txt"]
    assert not await fs.exists("/link.txt")


@pytest.mark.asyncio
async def test_a_symlinked_directory_outside_is_refused(layout):
    root, outside = layout
    os.symlink(outside, root / "out", target_is_directory=True)
    fs = LocalFileSystem(root)
    with pytest.raises(FileSystemError, match=r"^not found: /out/secret\.txt$"):
        await fs.read("/out/secret.txt")
    with pytest.raises(FileSystemError, match=r"^not found: /out$"):
        await fs.list("/out")
    with pytest.raises(FileSystemError, match=r"^write failed: /out/new\.txt$"):
        await fs.write("/out/new.txt", b"x")
    assert not (outside / "new.txt").exists()
    assert await fs.grep("secret") == []


@pytest.mark.asyncio
async def test_symlinks_inside_the_root_work(layout):
    root, _ = layout
    (root / "dir").mkdir()
    os.symlink(root / "inside.txt", root / "dir" / "alias.txt")
    fs = LocalFileSystem(root)
    assert await fs.read("/dir/alias.txt") == b"inside"
    await fs.write("/dir/alias.txt", b"through the link")
    assert (root / "inside.txt").read_text() == "through the link"
    await fs.delete("/dir/alias.txt")
    assert not (root / "dir" / "alias.txt").is_symlink()
    assert (root / "inside.txt").exists()


@pytest.mark.asyncio
async def test_a_symlink_loop_does_not_hang_a_walk(layout):
    root, _ = layout
    (root / "dir").mkdir()
    os.symlink(root, root / "dir" / "up", target_is_directory=True)
    fs = LocalFileSystem(root)
    assert await fs.glob("**") == ["/dir", "/dir/up", "/inside.txt"]


@pytest.mark.asyncio
async def test_only_regular_files_are_read(layout):
    root, _ = layout
    os.mkfifo(root / "pipe")
    fs = LocalFileSystem(root)
    with pytest.raises(FileSystemError, match=r"^not found: /pipe$"):
        await fs.read("/pipe")
    assert [entry.path for entry in await fs.list("/")] == ["/inside.txt"]


def test_the_root_must_be_a_directory(tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        LocalFileSystem(tmp_path / "missing")
