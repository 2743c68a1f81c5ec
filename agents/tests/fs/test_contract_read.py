"""The read side of the FileSystem contract, for every kind (memory, local, host, union, overlay)."""

from __future__ import annotations

import pytest

from agents.runtime.fs import FileInfo, FileSystemError, GrepMatch
from agents.tests.fs.trees import FILES


@pytest.mark.asyncio
async def test_read_returns_the_stored_bytes(tree):
    fs = await tree(FILES)
    for path, data in FILES.items():
        assert await fs.read(path) == data


@pytest.mark.asyncio
async def test_read_normalises_the_path_first(tree):
    fs = await tree(FILES)
    assert await fs.read("docs/./guide/../readme.md") == FILES["/docs/readme.md"]
    assert await fs.read("/../../docs//readme.md") == FILES["/docs/readme.md"]


@pytest.mark.asyncio
async def test_read_of_a_missing_file_is_not_found(tree):
    fs = await tree(FILES)
    with pytest.raises(FileSystemError) as raised:
        await fs.read("docs/missing.md")
    assert str(raised.value) == "not found: /docs/missing.md"


@pytest.mark.asyncio
async def test_read_of_a_directory_is_not_found(tree):
    fs = await tree(FILES)
    with pytest.raises(FileSystemError, match=r"^not found: /docs/guide$"):
        await fs.read("/docs/guide")


@pytest.mark.asyncio
async def test_list_gives_the_direct_children_sorted_by_path(tree):
    fs = await tree(FILES)
    assert await fs.list("/") == [
        FileInfo("/docs", is_dir=True),
        FileInfo("/notes.txt", is_dir=False, size=len(FILES["/notes.txt"])),
        FileInfo("/src", is_dir=True),
    ]
    assert [entry.path for entry in await fs.list("/src")] == ["/src/app.py", "/src/blob.bin", "/src/lib"]
    assert [entry.name for entry in await fs.list("/docs/")] == ["guide", "readme.md"]


@pytest.mark.asyncio
async def test_list_of_a_missing_directory_or_a_file_is_not_found(tree):
    fs = await tree(FILES)
    with pytest.raises(FileSystemError, match=r"^not found: /docs/nothing$"):
        await fs.list("/docs/nothing")
    with pytest.raises(FileSystemError, match=r"^not found: /docs/readme\.md$"):
        await fs.list("/docs/readme.md")


@pytest.mark.asyncio
async def test_stat_and_exists(tree):
    fs = await tree(FILES)
    assert await fs.stat("/") == FileInfo("/", is_dir=True)
    assert await fs.stat("/src/lib") == FileInfo("/src/lib", is_dir=True)
    assert await fs.stat("/src/app.py") == FileInfo("/src/app.py", is_dir=False, size=len(FILES["/src/app.py"]))
    assert await fs.exists("src/lib/util.py")
    assert not await fs.exists("/src/lib/nothing.py")
    with pytest.raises(FileSystemError, match=r"^not found: /src/nothing$"):
        await fs.stat("/src/nothing")


@pytest.mark.asyncio
async def test_walk_gives_everything_below_sorted_by_path(tree):
    fs = await tree(FILES)
    assert [entry.path for entry in await fs.walk("/docs")] == [
        "/docs/guide",
        "/docs/guide/intro.md",
        "/docs/readme.md",
    ]
    assert [entry.path for entry in await fs.walk("/")] == sorted([*FILES, "/docs", "/docs/guide", "/src", "/src/lib"])


@pytest.mark.asyncio
async def test_glob_is_sorted_by_path_and_spans_directories_with_double_star(tree):
    fs = await tree(FILES)
    assert await fs.glob("**/*.md") == ["/docs/guide/intro.md", "/docs/readme.md"]
    assert await fs.glob("/**/*.py") == ["/src/app.py", "/src/lib/util.py"]
    assert await fs.glob("/src/*.py") == ["/src/app.py"]


@pytest.mark.asyncio
async def test_glob_matches_directories_too(tree):
    fs = await tree(FILES)
    assert await fs.glob("*") == ["/docs", "/notes.txt", "/src"]
    assert await fs.glob("/src/l?b") == ["/src/lib"]


@pytest.mark.asyncio
async def test_glob_relative_to_a_path_and_with_alternatives(tree):
    fs = await tree(FILES)
    assert await fs.glob("*.py", path="/src") == ["/src/app.py"]
    assert await fs.glob("**/*.{py,bin}", path="src") == ["/src/app.py", "/src/blob.bin", "/src/lib/util.py"]
    assert await fs.glob("[!a]*", path="/src") == ["/src/blob.bin", "/src/lib"]


@pytest.mark.asyncio
async def test_glob_without_wildcards_or_with_no_match(tree):
    fs = await tree(FILES)
    assert await fs.glob("/notes.txt") == ["/notes.txt"]
    assert await fs.glob("/nothing.txt") == []
    assert await fs.glob("/nowhere/**/*.md") == []


@pytest.mark.asyncio
async def test_grep_is_sorted_by_path_then_line_number(tree):
    fs = await tree(FILES)
    assert await fs.grep("hello") == [
        GrepMatch("/docs/guide/intro.md", 3, "hello twice hello"),
        GrepMatch("/docs/readme.md", 2, "hello world"),
        GrepMatch("/notes.txt", 1, "top-level hello"),
        GrepMatch("/src/app.py", 2, "print('hello')"),
    ]


@pytest.mark.asyncio
async def test_grep_is_a_python_regex(tree):
    fs = await tree(FILES)
    matches = await fs.grep(r"(?i)^hello\b", path="/docs")
    assert [(match.path, match.line_number) for match in matches] == [
        ("/docs/guide/intro.md", 2),
        ("/docs/guide/intro.md", 3),
        ("/docs/readme.md", 2),
    ]


@pytest.mark.asyncio
async def test_grep_narrows_by_path_and_glob(tree):
    fs = await tree(FILES)
    assert [match.path for match in await fs.grep("hello", glob="*.py")] == ["/src/app.py"]
    assert [match.path for match in await fs.grep("(?i)hello", path="/docs", glob="guide/*.md")] == [
        "/docs/guide/intro.md",
        "/docs/guide/intro.md",
    ]
    assert [match.line_number for match in await fs.grep("ret", path="/src/lib/util.py")] == [2]


@pytest.mark.asyncio
async def test_grep_skips_binary_files(tree):
    fs = await tree(FILES)
    assert "/src/blob.bin" not in {match.path for match in await fs.grep("binary")}


@pytest.mark.asyncio
async def test_grep_with_an_invalid_pattern(tree):
    fs = await tree(FILES)
    with pytest.raises(FileSystemError) as raised:
        await fs.grep("(unclosed")
    assert str(raised.value) == "invalid grep pattern: (unclosed"


@pytest.mark.asyncio
async def test_grep_of_a_missing_path_is_not_found(tree):
    fs = await tree(FILES)
    with pytest.raises(FileSystemError, match=r"^not found: /nowhere$"):
        await fs.grep("x", path="/nowhere")


@pytest.mark.asyncio
async def test_glob_takes_a_broken_character_class_literally(tree):
    fs = await tree(FILES)
    assert await fs.glob("/src/[z-a]*") == []
    assert await fs.glob("/src/[!]*") == []
    assert await fs.glob("/src/[[]*") == []
