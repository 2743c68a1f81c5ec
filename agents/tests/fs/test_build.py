"""build_filesystem turns the agents.sdk root declarations into runtime file systems."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.runtime.fs import (
    EmptyFileSystem,
    FileSystemError,
    HostFileSystem,
    LocalFileSystem,
    MemoryFileStore,
    MemoryFileSystem,
    OverlayFileSystem,
    UnionFileSystem,
    build_filesystem,
)
from agents.sdk import empty_fs, host_fs, overlay_fs, temp_fs, union_fs


@pytest.mark.asyncio
async def test_no_root_is_the_session_workspace(tmp_path):
    (tmp_path / "AGENTS.md").write_text("be nice")
    fs = build_filesystem(None, workspace_dir=tmp_path, file_store_for=None)
    assert isinstance(fs, LocalFileSystem)
    assert await fs.read("/AGENTS.md") == b"be nice"


def test_no_root_and_no_workspace_is_a_platform_error():
    with pytest.raises(ValueError, match="workspace"):
        build_filesystem(None, workspace_dir=None, file_store_for=None)


@pytest.mark.asyncio
async def test_temp_fs_is_seeded_and_empty_fs_is_empty():
    fs = build_filesystem(temp_fs({"notes/a.md": "hello"}), workspace_dir=None, file_store_for=None)
    assert isinstance(fs, MemoryFileSystem)
    assert await fs.read("/notes/a.md") == b"hello"
    empty = build_filesystem(empty_fs(), workspace_dir=None, file_store_for=None)
    assert isinstance(empty, EmptyFileSystem)
    assert await empty.list("/") == []
    with pytest.raises(FileSystemError, match=r"^read-only mount: /a$"):
        await empty.write("/a", b"")


@pytest.mark.asyncio
async def test_host_fs_gets_the_store_of_its_scope():
    stores = {"session": MemoryFileStore(), "deployment": MemoryFileStore()}
    await stores["deployment"].write("/shared.md", b"agent-wide")
    fs = build_filesystem(
        union_fs({"/session": host_fs(), "/shared": host_fs(scope="deployment", read_only=True)}),
        workspace_dir=None,
        file_store_for=stores.__getitem__,
    )
    assert isinstance(fs, UnionFileSystem)
    await fs.write("/session/mine.md", b"m")
    assert (await stores["session"].read("/mine.md"))[0] == b"m"
    assert await fs.read("/shared/shared.md") == b"agent-wide"
    with pytest.raises(FileSystemError, match=r"^read-only mount: /shared/shared\.md$"):
        await fs.write("/shared/shared.md", b"x")


def test_host_fs_without_a_store_is_a_platform_error():
    with pytest.raises(ValueError, match="file store"):
        build_filesystem(host_fs(), workspace_dir=None, file_store_for=None)


@pytest.mark.asyncio
async def test_overlay_fs_builds_its_layers_in_order():
    fs = build_filesystem(
        overlay_fs(temp_fs({"/a": "top"}), temp_fs({"/a": "bottom", "/b": "b"})),
        workspace_dir=None,
        file_store_for=None,
    )
    assert isinstance(fs, OverlayFileSystem)
    assert await fs.read("/a") == b"top"
    assert await fs.read("/b") == b"b"
    assert isinstance(fs.layers[0], MemoryFileSystem)


def test_an_unevaluated_factory_is_refused():
    with pytest.raises(TypeError, match="FileSystem declaration"):
        build_filesystem(lambda session: temp_fs(), workspace_dir=None, file_store_for=None)


def test_host_fs_is_a_host_file_system():
    fs = build_filesystem(host_fs(), workspace_dir=None, file_store_for=lambda scope: MemoryFileStore())
    assert isinstance(fs, HostFileSystem)
    assert not fs.read_only


def test_the_package_imports_without_django():
    code = "import sys, agents.runtime.fs.build, agents.runtime.fs.tools; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])
