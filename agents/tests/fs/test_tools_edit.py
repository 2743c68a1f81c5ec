"""Write, StrReplace (its four errors and replace_all) and Delete."""

from __future__ import annotations

import pytest

from agents.runtime.fs import FileSystemError, MemoryFileSystem
from agents.runtime.fs.tools import call_file_tool, delete_file, replace_in_file, write_file

MULTIPLE = (
    "The string to replace was found multiple times in the file. Use replace_all to replace all occurrences, "
    "or include more context to only edit one occurrence."
)


def _fs() -> MemoryFileSystem:
    return MemoryFileSystem({"/a.py": "x = 1\ny = 1\nz = 2\n"})


@pytest.mark.asyncio
async def test_str_replace_edits_the_one_occurrence():
    fs = _fs()
    assert await replace_in_file(fs, "/a.py", "z = 2", "z = 3") == {"path": "/a.py", "replacements": 1}
    assert await fs.read("/a.py") == b"x = 1\ny = 1\nz = 3\n"


@pytest.mark.asyncio
async def test_str_replace_all_occurrences():
    fs = _fs()
    result = await call_file_tool(
        fs, "StrReplace", {"path": "a.py", "oldText": "= 1", "newText": "= 0", "replace_all": True}
    )
    assert result == {"path": "/a.py", "replacements": 2}
    assert await fs.read("/a.py") == b"x = 0\ny = 0\nz = 2\n"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("", "anything", "oldText is empty"),
        ("", "", "oldText is empty"),
        ("x = 1", "x = 1", "oldText and newText are exactly the same"),
        ("w = 9", "w = 0", "The string to replace was not found in the file"),
        ("= 1", "= 0", MULTIPLE),
    ],
)
async def test_str_replace_errors(old, new, message):
    fs = _fs()
    with pytest.raises(FileSystemError) as raised:
        await replace_in_file(fs, "/a.py", old, new)
    assert str(raised.value) == message
    assert await fs.read("/a.py") == b"x = 1\ny = 1\nz = 2\n"


@pytest.mark.asyncio
async def test_str_replace_on_a_missing_file_is_not_found():
    with pytest.raises(FileSystemError, match=r"^not found: /b\.py$"):
        await replace_in_file(_fs(), "/b.py", "a", "b")


@pytest.mark.asyncio
async def test_str_replace_keeps_bytes_that_are_not_utf8():
    fs = MemoryFileSystem({"/latin.txt": b"caf\xe9 old\n"})
    await replace_in_file(fs, "/latin.txt", "old", "new")
    assert await fs.read("/latin.txt") == b"caf\xe9 new\n"


@pytest.mark.asyncio
async def test_write_and_delete():
    fs = _fs()
    assert await write_file(fs, "notes/n.md", "héllo") == {"path": "/notes/n.md", "size": 6}
    assert await fs.read("/notes/n.md") == "héllo".encode()
    assert await delete_file(fs, "/notes") == {"path": "/notes", "deleted": True}
    assert not await fs.exists("/notes/n.md")
    with pytest.raises(FileSystemError, match=r"^not found: /notes$"):
        await call_file_tool(fs, "Delete", {"path": "/notes"})
