"""The Read tool: numbered lines like ``cat -n``, offset and limit, images as image parts."""

from __future__ import annotations

import base64

import pytest

from agents.runtime.fs import FileSystemError, MemoryFileSystem
from agents.runtime.fs.tools import call_file_tool, read_file

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


def _fs() -> MemoryFileSystem:
    lines = "".join(f"line {number}\n" for number in range(1, 13))
    return MemoryFileSystem(
        {"/a.txt": lines, "/crlf.txt": "one\r\ntwo\r\n", "/empty.txt": "", "/pic.png": PNG, "/Photo.JPG": b"jpg"}
    )


@pytest.mark.asyncio
async def test_lines_are_numbered_like_cat_n():
    text = await read_file(_fs(), "/a.txt", limit=2)
    assert text == "     1\tline 1\n     2\tline 2"


@pytest.mark.asyncio
async def test_offset_and_limit_pick_a_window_numbered_from_the_file():
    assert await read_file(_fs(), "a.txt", offset=10, limit=2) == "    10\tline 10\n    11\tline 11"
    assert await read_file(_fs(), "/a.txt", offset=12) == "    12\tline 12"
    assert await read_file(_fs(), "/a.txt", offset=50) == ""


@pytest.mark.asyncio
async def test_the_default_reads_up_to_2000_lines():
    fs = MemoryFileSystem({"/long.txt": "x\n" * 2500})
    text = await read_file(fs, "/long.txt")
    assert isinstance(text, str)
    lines = text.split("\n")
    assert len(lines) == 2000
    assert lines[-1] == "  2000\tx"


@pytest.mark.asyncio
async def test_carriage_returns_and_empty_files():
    assert await read_file(_fs(), "/crlf.txt") == "     1\tone\n     2\ttwo"
    assert await read_file(_fs(), "/empty.txt") == ""


@pytest.mark.asyncio
async def test_images_come_back_as_image_parts():
    assert await read_file(_fs(), "/pic.png") == {
        "type": "image",
        "mediaType": "image/png",
        "data": base64.b64encode(PNG).decode(),
    }
    part = await read_file(_fs(), "/Photo.JPG")
    assert isinstance(part, dict)
    assert part["mediaType"] == "image/jpeg"


@pytest.mark.asyncio
async def test_reading_a_missing_file_is_not_found():
    with pytest.raises(FileSystemError) as raised:
        await read_file(_fs(), "/nope.txt")
    assert str(raised.value) == "not found: /nope.txt"


@pytest.mark.asyncio
async def test_the_tool_runs_from_its_json_arguments():
    assert await call_file_tool(_fs(), "Read", {"path": "/a.txt", "offset": 3, "limit": 1}) == "     3\tline 3"
