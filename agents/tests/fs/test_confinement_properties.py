"""Hypothesis: random sequences of file operations on random, hostile paths (``..``,
backslashes, encoded dots, NUL, lone surrogates, overlong names, symlinks leading out)
never reach outside a file system's root and never raise anything but the contract's
``FileSystemError``s, on every kind of file system."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.runtime.fs import (
    FileSystem,
    FileSystemError,
    HostFileSystem,
    LocalFileSystem,
    MemoryFileStore,
    MemoryFileSystem,
    OverlayFileSystem,
    UnionFileSystem,
    normalize,
)

SECRET = b"OUTSIDE-SECRET"

SEGMENTS = st.sampled_from(
    [
        "",
        ".",
        "..",
        "...",
        "a",
        "b.txt",
        "dir",
        "link_out",
        "link_in",
        "secret_link",
        "loop",
        "outside",
        "secret.txt",
        "%2e%2e",
        "%252e%252e",
        "..%2f..",
        "..\\..",
        "a\\b",
        "\x00",
        "a\x00b",
        "\udc80",
        "\ud800",
        "\xc0\xae",  # an overlong UTF-8 "." read as Latin-1
        "x" * 300,
        "ø",
        " ",
    ]
) | st.text(max_size=6)
PATHS = st.builds(
    lambda absolute, parts: ("/" if absolute else "") + "/".join(parts), st.booleans(), st.lists(SEGMENTS, max_size=6)
)
PATTERNS = st.sampled_from(["*", "**", "**/*", "*.txt", "../*", "/../**", "{a,..}/*", "[", "(", "secret"]) | st.text(
    max_size=5
)

OPERATIONS = st.one_of(
    st.tuples(st.just("read"), PATHS),
    st.tuples(st.just("write"), PATHS),
    st.tuples(st.just("delete"), PATHS),
    st.tuples(st.just("list"), PATHS),
    st.tuples(st.just("stat"), PATHS),
    st.tuples(st.just("exists"), PATHS),
    st.tuples(st.just("walk"), PATHS),
    st.tuples(st.just("glob"), PATTERNS, PATHS),
    st.tuples(st.just("grep"), PATTERNS, PATHS),
)


def _local_root(top: Path, name: str) -> LocalFileSystem:
    """A directory with the ways out a workspace could hold: links to the outside, a
    link back in, a link to itself."""
    root = top / name
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "inside.txt").write_bytes(b"inside")
    os.symlink(top / "outside", root / "link_out")
    os.symlink(top / "outside" / "secret.txt", root / "secret_link")
    os.symlink(root / "dir", root / "link_in")
    os.symlink(root / "loop", root / "loop")
    return LocalFileSystem(root)


def _build(kind: str, top: Path) -> FileSystem:
    if kind == "local":
        return _local_root(top, "root")
    if kind == "memory":
        return MemoryFileSystem({"/dir/inside.txt": b"inside"})
    if kind == "host":
        return HostFileSystem(MemoryFileStore())
    if kind == "union":
        return UnionFileSystem(
            [
                ("/dir", MemoryFileSystem()),
                ("/src", _local_root(top, "union-src")),
                ("/", HostFileSystem(MemoryFileStore())),
            ]
        )
    return OverlayFileSystem([MemoryFileSystem({"/a": b"top"}), _local_root(top, "lower")])


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() for path in directory.rglob("*") if path.is_file()}


async def _apply(fs: FileSystem, operation: tuple[str, ...]) -> object:
    name, *args = operation
    if name == "write":
        return await fs.write(args[0], b"written")
    if name in {"glob", "grep"}:
        return await getattr(fs, name)(args[0], args[1])
    return await getattr(fs, name)(args[0])


def _mentions_secret(result: object) -> bool:
    return SECRET in repr(result).encode() or SECRET.decode() in repr(result)


@pytest.mark.parametrize("kind", ["local", "memory", "host", "union", "overlay"])
def test_random_operations_stay_inside_the_root_and_fail_only_with_contract_errors(kind):
    @settings(
        max_examples=int(os.environ.get("FUZZ_EXAMPLES_FS", "40")),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(operations=st.lists(OPERATIONS, min_size=1, max_size=10))
    def run(operations: list[tuple[str, ...]]) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            top = Path(scratch)
            (top / "outside").mkdir()
            (top / "outside" / "secret.txt").write_bytes(SECRET)
            fs = _build(kind, top)
            before = _snapshot(top / "outside")
            siblings = {path.name for path in top.iterdir()}
            for operation in operations:
                try:
                    result = asyncio.run(_apply(fs, operation))
                except FileSystemError:
                    continue
                assert not _mentions_secret(result), (operation, result)
                if operation[0] in {"list", "walk"}:
                    assert all(entry.path == normalize(entry.path) for entry in result), result  # type: ignore[attr-defined]
                if operation[0] == "glob":
                    assert all(path == normalize(path) for path in result), result  # type: ignore[attr-defined]
            assert _snapshot(top / "outside") == before
            assert {path.name for path in top.iterdir()} == siblings

    run()
