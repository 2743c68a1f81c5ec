"""The FileSystem contract every root implements, its errors and its path rules.

Paths are absolute posix strings. ``normalize`` is the one place that decides what
a path means: a relative path is taken relative to ``/``, ``.``/``..``/``//`` are
collapsed, and ``..`` never climbs above ``/``::

    normalize("a/../memory/x")  # "/memory/x"
    normalize("/../../etc")     # "/etc"

Sorting is part of the contract: ``list``, ``walk`` and ``glob`` return paths in
sorted order, ``grep`` sorts by path then line number.

Error texts are part of the contract too (the model reads them): ``not found: PATH``,
``write failed: PATH``, ``read-only mount: PATH``, ``no mount for path: PATH``,
``invalid grep pattern: PATTERN``.
"""

from __future__ import annotations

import abc
import builtins
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

# --- errors ------------------------------------------------------------------------


class FileSystemError(Exception):
    """A file operation failed in a way the model should see; ``str()`` is the contract text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class PathError(FileSystemError):
    """An error about one path. ``at(path)`` re-issues it for another path, so a union
    mount can report the path the caller used rather than the one its mount saw."""

    template: ClassVar[str] = "{path}"

    def __init__(self, path: str) -> None:
        super().__init__(self.template.format(path=path))
        self.path = path

    def at(self, path: str) -> PathError:
        return type(self)(path)


class NotFoundError(PathError):
    """No file (or, for ``list``, no directory) at the path."""

    template = "not found: {path}"


class WriteFailedError(PathError):
    """A write or delete could not be done: a directory is in the way, the path climbs
    out of a local root, or an etag did not match."""

    template = "write failed: {path}"


class ReadOnlyError(PathError):
    """The path belongs to a read-only file system or mount."""

    template = "read-only mount: {path}"


class NoMountError(PathError):
    """A union has no mount whose prefix covers the path."""

    template = "no mount for path: {path}"


class InvalidPathError(PathError):
    """The path cannot name a file at all: it contains a NUL byte, or a lone surrogate
    that no file name (and no UTF-8 text) can hold."""

    template = "invalid path: {path}"

    def __init__(self, path: str) -> None:
        # Shown escaped: the message travels in events, which must stay valid UTF-8.
        super().__init__(path.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode())


class InvalidPatternError(FileSystemError):
    """``grep`` was given a regular expression Python's ``re`` rejects."""

    def __init__(self, pattern: str) -> None:
        super().__init__(f"invalid grep pattern: {pattern}")
        self.pattern = pattern


# --- paths -------------------------------------------------------------------------


def normalize(path: str) -> str:
    """The canonical absolute form of ``path``.

    Example: ``normalize("./memory//x/.")`` is ``"/memory/x"``.

    Raises:
        InvalidPathError: when the path contains a NUL byte or is not valid Unicode
            (a lone surrogate, e.g. from a JSON ``"\\ud800"``).
    """
    if "\x00" in path or not is_utf8(path):
        raise InvalidPathError(path)
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (Python strings may hold lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def join(base: str, *more: str) -> str:
    """``base`` and ``more`` joined and normalised; each of ``more`` is relative to the one before
    unless it is absolute."""
    path = base
    for part in more:
        path = part if part.startswith("/") else f"{path}/{part}"
    return normalize(path)


def parent(path: str) -> str:
    """The directory holding a normalised path (``/`` for ``/``)."""
    head = path.rsplit("/", 1)[0]
    return head or "/"


def basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def is_within(path: str, prefix: str) -> bool:
    """Whether normalised ``path`` is ``prefix`` or below it, on whole path segments:
    ``/data/x`` is within ``/data``, ``/database`` is not."""
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def ancestors(path: str) -> builtins.list[str]:
    """The directories above a normalised path, nearest last, without ``/``: ``/a/b/c`` gives
    ``["/a", "/a/b"]``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def split_lines(text: str) -> builtins.list[str]:
    """Lines as ``Read`` numbers them and ``grep`` reports them: split on ``\\n`` only, a trailing
    newline does not start another line, and a ``\\r`` before the newline is dropped."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def decode_text(data: bytes) -> str | None:
    """``data`` as text, or ``None`` for what looks binary (a NUL byte); bad UTF-8 is replaced."""
    if b"\x00" in data:
        return None
    return data.decode("utf-8", errors="replace")


# --- glob --------------------------------------------------------------------------

_MAGIC = re.compile(r"[*?\[{]")


def has_magic(pattern: str) -> bool:
    return _MAGIC.search(pattern) is not None


def _expand_braces(pattern: str) -> builtins.list[str]:
    # "{a,b}" alternatives, innermost first so nested braces also expand.
    match = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    expanded: list[str] = []
    for option in match.group(1).split(","):
        expanded.extend(_expand_braces(head + option + tail))
    return expanded


def _char_class(body: str) -> str | None:
    """``[abc]``/``[!a-z]`` as a regex class, or ``None`` when it is not a valid one (then the
    ``[`` is taken literally)."""
    negate = body[:1] in ("!", "^")
    members = body[1:] if negate else body
    if not members:
        return None
    group = "[" + ("^" if negate else "") + "".join(c if c == "-" else re.escape(c) for c in members) + "]"
    try:
        re.compile(group)
    except re.error:
        return None
    return group


def _translate_segment(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := segment.find("]", i + 2)) != -1 and (group := _char_class(segment[i + 1 : end])):
            out.append(group)
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _translate(pattern: str) -> str:
    if pattern == "/":
        return "/"
    out: list[str] = []
    for segment in pattern.strip("/").split("/"):
        if segment == "**":
            out.append("(?:/[^/]+)*")
        else:
            out.append("/" + _translate_segment(segment))
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching the absolute paths ``pattern`` names.

    ``*`` and ``?`` stay inside one path segment, ``**`` spans any number of segments
    (none included), ``[abc]``/``[!abc]`` are character classes and ``{a,b}`` alternatives.
    Dot files are not special.

    Raises:
        InvalidPathError: when the pattern contains a NUL byte.
    """
    alternatives = [_translate(normalize(option)) for option in _expand_braces(pattern)]
    return re.compile("(?:" + "|".join(alternatives) + r")\Z")


def glob_base(pattern: str) -> str:
    """The longest directory of a normalised pattern that has no wildcard in it."""
    literal: list[str] = []
    for segment in pattern.strip("/").split("/"):
        if has_magic(segment):
            break
        literal.append(segment)
    return normalize("/".join(literal))


def file_filter(glob: str | None, base: str) -> re.Pattern[str] | None:
    """How ``grep`` reads its ``glob`` argument: without a ``/`` it matches file names at any
    depth (``*.py``), with one it is a path pattern relative to ``base`` (``src/**/*.py``)."""
    if glob is None:
        return None
    if "/" not in glob:
        return compile_glob("/**/" + glob)
    return compile_glob(join(base, glob))


# --- the contract ------------------------------------------------------------------


@dataclass(frozen=True)
class FileInfo:
    """One entry of a directory listing."""

    path: str
    is_dir: bool
    size: int = 0

    @property
    def name(self) -> str:
        return basename(self.path)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "name": self.name,
            "type": "directory" if self.is_dir else "file",
            "size": self.size,
        }


@dataclass(frozen=True)
class GrepMatch:
    """One matching line; ``line_number`` counts from 1."""

    path: str
    line_number: int
    line: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "lineNumber": self.line_number, "line": self.line}


def by_path(entries: Iterable[FileInfo]) -> builtins.list[FileInfo]:
    return sorted(entries, key=lambda entry: entry.path)


def compile_grep(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled with Python's ``re``.

    Raises:
        InvalidPatternError: when ``re`` rejects the pattern.
    """
    try:
        return re.compile(pattern)
    except re.error:
        raise InvalidPatternError(pattern) from None


class FileSystem(abc.ABC):
    """The file tree an agent's file tools work on.

    Implementations provide ``read``, ``write``, ``delete``, ``list`` and ``stat``;
    ``exists``, ``walk``, ``glob`` and ``grep`` are built on those and may be overridden
    for speed. Every method takes any path and normalises it first.

    Directories exist while something is in them; a write creates the directories above
    the file. ``list`` of a file is ``not found`` (there is no directory there), and so is
    ``read`` of a directory.
    """

    @abc.abstractmethod
    async def read(self, path: str) -> bytes:
        """The file's bytes.

        Raises:
            NotFoundError: no file at the path.
        """

    @abc.abstractmethod
    async def write(self, path: str, data: bytes) -> None:
        """Create or replace a file, creating the directories above it.

        Raises:
            WriteFailedError: the path is a directory or ``/``, or a file is in the way above it.
            ReadOnlyError: the file system is read-only.
        """

    @abc.abstractmethod
    async def delete(self, path: str) -> None:
        """Remove a file, or a directory with everything in it.

        Raises:
            NotFoundError: nothing at the path.
            WriteFailedError: the path is ``/``.
            ReadOnlyError: the file system is read-only.
        """

    @abc.abstractmethod
    async def list(self, path: str = "/") -> builtins.list[FileInfo]:
        """The direct children of a directory, sorted by path.

        Raises:
            NotFoundError: no directory at the path.
        """

    @abc.abstractmethod
    async def stat(self, path: str) -> FileInfo:
        """What is at the path; ``/`` is always a directory.

        Raises:
            NotFoundError: nothing at the path.
        """

    async def exists(self, path: str) -> bool:
        try:
            await self.stat(path)
        except (NotFoundError, NoMountError):
            return False
        return True

    async def walk(self, path: str = "/") -> builtins.list[FileInfo]:
        """Everything below a directory (files and directories, not the directory itself), sorted
        by path; a file walks to nothing.

        Raises:
            NotFoundError: nothing at the path.
        """
        top = await self.stat(path)
        if not top.is_dir:
            return []
        found: list[FileInfo] = []
        pending = [top.path]
        while pending:
            for entry in await self.list(pending.pop()):
                found.append(entry)
                if entry.is_dir:
                    pending.append(entry.path)
        return by_path(found)

    async def glob(self, pattern: str, path: str = "/") -> builtins.list[str]:
        """Paths of files and directories matching ``pattern`` (see ``compile_glob``); a relative
        pattern is taken relative to ``path``. Sorted; a missing directory matches nothing."""
        absolute = join(path, pattern)
        if not has_magic(absolute):
            return [absolute] if await self.exists(absolute) else []
        matcher = compile_glob(absolute)
        try:
            entries = await self.walk(glob_base(absolute))
        except (NotFoundError, NoMountError):
            return []
        return [entry.path for entry in entries if matcher.match(entry.path)]

    async def grep(self, pattern: str, path: str = "/", glob: str | None = None) -> builtins.list[GrepMatch]:
        """Lines matching the regex ``pattern`` (Python ``re``, searched anywhere in the line) in the
        text files at or below ``path``, optionally only files matching ``glob`` (see
        ``file_filter``). Binary files are skipped. Sorted by path, then line number.

        Raises:
            InvalidPatternError: ``re`` rejects the pattern.
            NotFoundError: nothing at ``path``.
        """
        regex = compile_grep(pattern)
        top = await self.stat(path)
        files = [top] if not top.is_dir else [entry for entry in await self.walk(top.path) if not entry.is_dir]
        wanted = file_filter(glob, top.path if top.is_dir else parent(top.path))
        matches: list[GrepMatch] = []
        for entry in files:
            if wanted is not None and not wanted.match(entry.path):
                continue
            text = decode_text(await self.read(entry.path))
            if text is None:
                continue
            for number, line in enumerate(split_lines(text), start=1):
                if regex.search(line):
                    matches.append(GrepMatch(entry.path, number, line))
        return sorted(matches, key=lambda match: (match.path, match.line_number))
