"""overlay_fs: the first layer that has a path wins; listings merge; nothing can be written."""

from __future__ import annotations

import pytest

from agents.runtime.fs import FileInfo, FileSystemError, MemoryFileSystem, OverlayFileSystem


def _overlay() -> OverlayFileSystem:
    top = MemoryFileSystem({"/shared.md": "top", "/top-only.md": "t", "/thing": "a file on top"})
    bottom = MemoryFileSystem({"/shared.md": "bottom layer", "/bottom-only.md": "b", "/thing/inside.md": "hidden"})
    return OverlayFileSystem([top, bottom])


@pytest.mark.asyncio
async def test_a_path_is_read_from_the_first_layer_that_has_it():
    fs = _overlay()
    assert await fs.read("/shared.md") == b"top"
    assert await fs.read("/bottom-only.md") == b"b"


@pytest.mark.asyncio
async def test_listings_merge_the_layers_with_the_earlier_winning():
    fs = _overlay()
    assert await fs.list("/") == [
        FileInfo("/bottom-only.md", is_dir=False, size=1),
        FileInfo("/shared.md", is_dir=False, size=3),
        FileInfo("/thing", is_dir=False, size=13),
        FileInfo("/top-only.md", is_dir=False, size=1),
    ]
    assert await fs.glob("*.md") == ["/bottom-only.md", "/shared.md", "/top-only.md"]
    assert [(match.path, match.line) for match in await fs.grep("top|bottom")] == [
        ("/shared.md", "top"),
        ("/thing", "a file on top"),
    ]


@pytest.mark.asyncio
async def test_an_earlier_file_hides_a_later_directory_of_the_same_name():
    fs = _overlay()
    assert not (await fs.stat("/thing")).is_dir
    assert await fs.glob("/thing/*") == []
    with pytest.raises(FileSystemError, match=r"^not found: /thing$"):
        await fs.list("/thing")
    with pytest.raises(FileSystemError, match=r"^not found: /thing/inside\.md$"):
        await fs.read("/thing/inside.md")


@pytest.mark.asyncio
async def test_an_overlay_is_read_only():
    fs = _overlay()
    with pytest.raises(FileSystemError) as raised:
        await fs.write("notes/new.md", b"x")
    assert str(raised.value) == "read-only mount: /notes/new.md"
    with pytest.raises(FileSystemError, match=r"^read-only mount: /shared\.md$"):
        await fs.delete("/shared.md")
    assert await fs.read("/shared.md") == b"top"


@pytest.mark.asyncio
async def test_a_path_no_layer_has_is_not_found():
    fs = _overlay()
    with pytest.raises(FileSystemError, match=r"^not found: /nothing$"):
        await fs.read("/nothing")
