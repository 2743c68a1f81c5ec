"""The file tools synthesized from an agent's ``root``: ``Read``, ``LS``, ``Glob``, ``Grep``,
``Write``, ``StrReplace``, ``Delete`` and ``SemanticSearch``.

Each is a plain async function over a ``FileSystem`` that returns something JSON can
carry, or raises ``FileSystemError`` whose text the model is shown. ``FILE_TOOL_SPECS``
is what the model is told about them and ``call_file_tool`` runs one from its
(already schema-validated) arguments.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NamedTuple

from agents.runtime.fs.base import FileSystem, FileSystemError, decode_text, normalize, split_lines
from agents.runtime.fs.search import rank
from agents.sdk._fs import EmptyFS, HostFS, OverlayFS

IMAGE_MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


class EditError(FileSystemError):
    """``StrReplace`` could not make the edit it was asked for."""


def image_media_type(path: str) -> str | None:
    """The image media type for the path's extension, or ``None`` for anything else."""
    name = path.rsplit("/", 1)[-1].lower()
    extension = name[name.rfind(".") :] if "." in name else ""
    return IMAGE_MEDIA_TYPES.get(extension)


async def read_file(fs: FileSystem, path: str, offset: int = 1, limit: int = 2000) -> str | dict[str, str]:
    """``Read``: ``limit`` lines from line ``offset`` (1-based), numbered like ``cat -n``
    (``"     1\\tfirst line"``); an image file comes back whole as an image part
    ``{"type": "image", "mediaType": ..., "data": <base64>}``.

    Raises:
        NotFoundError: no file at the path.
    """
    data = await fs.read(path)
    media_type = image_media_type(normalize(path))
    if media_type is not None:
        return {"type": "image", "mediaType": media_type, "data": base64.b64encode(data).decode("ascii")}
    text = data.decode("utf-8", errors="replace")
    first = max(offset, 1)
    lines = split_lines(text)[first - 1 : first - 1 + max(limit, 0)]
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(lines, start=first))


async def list_files(fs: FileSystem, path: str = "/") -> list[dict[str, Any]]:
    """``LS``: the directory's entries, sorted by path.

    Raises:
        NotFoundError: no directory at the path.
    """
    return [entry.to_json() for entry in await fs.list(path)]


async def glob_files(fs: FileSystem, pattern: str, path: str = "/") -> list[str]:
    """``Glob``: matching paths, sorted."""
    return await fs.glob(pattern, path)


async def grep_files(fs: FileSystem, pattern: str, path: str = "/", glob: str | None = None) -> list[dict[str, Any]]:
    """``Grep``: matching lines, by path then line number.

    Raises:
        InvalidPatternError: the regex does not compile.
        NotFoundError: nothing at the path.
    """
    return [match.to_json() for match in await fs.grep(pattern, path, glob)]


async def write_file(fs: FileSystem, path: str, content: str) -> dict[str, Any]:
    """``Write``: create or replace a text file.

    Raises:
        WriteFailedError, ReadOnlyError, NoMountError: as ``FileSystem.write``.
    """
    data = content.encode()
    await fs.write(path, data)
    return {"path": normalize(path), "size": len(data)}


async def replace_in_file(
    fs: FileSystem, path: str, old_text: str, new_text: str, replace_all: bool = False
) -> dict[str, Any]:
    """``StrReplace``: replace ``old_text`` with ``new_text``; it must occur exactly once unless
    ``replace_all``.

    Raises:
        EditError: ``old_text`` is empty, equals ``new_text``, is missing, or occurs more than once.
        NotFoundError: no file at the path.
    """
    if not old_text:
        raise EditError("oldText is empty")
    if old_text == new_text:
        raise EditError("oldText and newText are exactly the same")
    # surrogateescape keeps bytes that are not UTF-8 exactly as they were.
    text = (await fs.read(path)).decode("utf-8", errors="surrogateescape")
    count = text.count(old_text)
    if count == 0:
        raise EditError("The string to replace was not found in the file")
    if count > 1 and not replace_all:
        raise EditError(
            "The string to replace was found multiple times in the file. Use replace_all to replace all "
            "occurrences, or include more context to only edit one occurrence."
        )
    await fs.write(path, text.replace(old_text, new_text).encode("utf-8", errors="surrogateescape"))
    return {"path": normalize(path), "replacements": count}


async def delete_file(fs: FileSystem, path: str) -> dict[str, Any]:
    """``Delete``: remove a file, or a directory and everything in it.

    Raises:
        NotFoundError, WriteFailedError, ReadOnlyError: as ``FileSystem.delete``.
    """
    await fs.delete(path)
    return {"path": normalize(path), "deleted": True}


async def semantic_search(fs: FileSystem, query: str, path: str = "/", limit: int = 10) -> list[dict[str, Any]]:
    """``SemanticSearch``: the text files at or below ``path`` that best match ``query`` (see
    ``search.rank``), by score high to low, then path.

    Raises:
        NotFoundError: nothing at the path.
    """
    top = await fs.stat(path)
    entries = [top] if not top.is_dir else [entry for entry in await fs.walk(top.path) if not entry.is_dir]
    documents: dict[str, str] = {}
    for entry in entries:
        if image_media_type(entry.path) is not None:
            continue
        text = decode_text(await fs.read(entry.path))
        if text is not None:
            documents[entry.path] = text
    return [hit.to_json() for hit in rank(query, documents, limit)]


# --- what the model is told ---------------------------------------------------------


class FileToolSpec(NamedTuple):
    description: str
    input_schema: dict[str, Any]


def _schema(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_PATH = {"type": "string", "description": "Absolute path, e.g. /docs/readme.md"}
_DIRECTORY = {"type": "string", "description": "Directory to start from; default /", "default": "/"}

FILE_TOOL_SPECS: dict[str, FileToolSpec] = {
    "Read": FileToolSpec(
        "Read a file. Text comes back with numbered lines (like cat -n) from line `offset`, at most `limit` "
        "lines; images (png, jpeg, gif, webp) come back as images.",
        _schema(
            {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1, "default": 1, "description": "First line, from 1"},
                "limit": {"type": "integer", "minimum": 1, "default": 2000, "description": "Most lines to return"},
            },
            ["path"],
        ),
    ),
    "LS": FileToolSpec(
        "List a directory: each entry's path, name, type (file or directory) and size, sorted by path.",
        _schema({"path": _DIRECTORY}, []),
    ),
    "Glob": FileToolSpec(
        "Find paths matching a glob pattern (`*`, `?`, `[abc]`, `{a,b}`, and `**` for any depth), "
        "sorted by path. A relative pattern starts at `path`.",
        _schema({"pattern": {"type": "string", "description": "e.g. **/*.py"}, "path": _DIRECTORY}, ["pattern"]),
    ),
    "Grep": FileToolSpec(
        "Search file contents with a Python regular expression. Returns path, lineNumber and line for each "
        "match, sorted by path then line. `glob` limits the files searched (`*.py`, `src/**/*.ts`).",
        _schema(
            {
                "pattern": {"type": "string", "description": "Python regular expression"},
                "path": {"type": "string", "description": "File or directory to search; default /", "default": "/"},
                "glob": {"type": "string", "description": "Only files matching this glob"},
            },
            ["pattern"],
        ),
    ),
    "Write": FileToolSpec(
        "Create or overwrite a text file, creating its directories.",
        _schema({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
    ),
    "StrReplace": FileToolSpec(
        "Replace oldText with newText in a file. oldText must occur exactly once unless replace_all is true.",
        _schema(
            {
                "path": _PATH,
                "oldText": {"type": "string", "description": "Exact text to replace"},
                "newText": {"type": "string", "description": "Text to put in its place"},
                "replace_all": {"type": "boolean", "default": False},
            },
            ["path", "oldText", "newText"],
        ),
    ),
    "Delete": FileToolSpec(
        "Delete a file, or a directory with everything in it.",
        _schema({"path": _PATH}, ["path"]),
    ),
    "SemanticSearch": FileToolSpec(
        "Find the files most relevant to a natural-language query, best first, with the best matching line of each.",
        _schema(
            {
                "query": {"type": "string"},
                "path": _DIRECTORY,
                "limit": {"type": "integer", "minimum": 1, "default": 10},
            },
            ["query"],
        ),
    ),
}

FILE_TOOL_NAMES: tuple[str, ...] = tuple(FILE_TOOL_SPECS)

_RUNNERS: dict[str, Callable[[FileSystem, Mapping[str, Any]], Awaitable[Any]]] = {
    "Read": lambda fs, a: read_file(fs, a["path"], a.get("offset", 1), a.get("limit", 2000)),
    "LS": lambda fs, a: list_files(fs, a.get("path", "/")),
    "Glob": lambda fs, a: glob_files(fs, a["pattern"], a.get("path", "/")),
    "Grep": lambda fs, a: grep_files(fs, a["pattern"], a.get("path", "/"), a.get("glob")),
    "Write": lambda fs, a: write_file(fs, a["path"], a["content"]),
    "StrReplace": lambda fs, a: replace_in_file(
        fs, a["path"], a["oldText"], a["newText"], bool(a.get("replace_all", False))
    ),
    "Delete": lambda fs, a: delete_file(fs, a["path"]),
    "SemanticSearch": lambda fs, a: semantic_search(fs, a["query"], a.get("path", "/"), a.get("limit", 10)),
}


# The file tools that change files; a read-only root never gets them.
WRITE_FILE_TOOLS = frozenset({"Write", "StrReplace", "Delete"})


def is_read_only(spec: object) -> bool:
    """Whether a root declaration can never be written (callable factories: unknown, so False)."""
    return isinstance(spec, (EmptyFS, OverlayFS)) or (isinstance(spec, HostFS) and spec.read_only)


def select_file_tools(allow: Sequence[str] | None) -> list[str]:
    """The synthesized tools an agent gets, in ``FILE_TOOL_NAMES`` order: all of them, or those
    its ``tools=[...]`` allow-list names.

    Raises:
        ValueError: the allow-list names a tool that does not exist.
    """
    if allow is None:
        return list(FILE_TOOL_NAMES)
    unknown = sorted(set(allow) - set(FILE_TOOL_NAMES))
    if unknown:
        raise ValueError(f"unknown file tools {unknown!r}; the file tools are {list(FILE_TOOL_NAMES)!r}")
    return [name for name in FILE_TOOL_NAMES if name in allow]


async def call_file_tool(fs: FileSystem, name: str, arguments: Mapping[str, Any]) -> Any:
    """Run the file tool ``name`` with arguments that passed its input schema (the turn checks
    them with ``tool_calls.schema_arguments`` first).

    Raises:
        FileSystemError: what the model should be shown as the tool's error.
        KeyError: ``name`` is not a file tool.
    """
    return await _RUNNERS[name](fs, arguments)
