"""The runtime FileSystem behind an agent's ``root`` and its synthesized file tools.

Pure Python and async throughout (host storage is async); nothing here imports Django.
``build_filesystem`` turns the ``agents.sdk`` declarations into one of these trees,
``with_turn_scratch`` adds the per-turn ``/tmp``, and ``tools`` holds the file tools.
"""

from agents.runtime.fs.base import (
    FileInfo,
    FileSystem,
    FileSystemError,
    GrepMatch,
    InvalidPathError,
    InvalidPatternError,
    NoMountError,
    NotFoundError,
    PathError,
    ReadOnlyError,
    WriteFailedError,
    normalize,
)
from agents.runtime.fs.build import build_filesystem
from agents.runtime.fs.compose import OverlayFileSystem, UnionFileSystem
from agents.runtime.fs.host import FileStore, HostFileSystem, MemoryFileStore, StoreEntry
from agents.runtime.fs.local import LocalFileSystem
from agents.runtime.fs.memory import EmptyFileSystem, MemoryFileSystem
from agents.runtime.fs.scratch import TurnScratch, with_turn_scratch

__all__ = [
    "EmptyFileSystem",
    "FileInfo",
    "FileStore",
    "FileSystem",
    "FileSystemError",
    "GrepMatch",
    "HostFileSystem",
    "InvalidPathError",
    "InvalidPatternError",
    "LocalFileSystem",
    "MemoryFileStore",
    "MemoryFileSystem",
    "NoMountError",
    "NotFoundError",
    "OverlayFileSystem",
    "PathError",
    "ReadOnlyError",
    "StoreEntry",
    "TurnScratch",
    "UnionFileSystem",
    "WriteFailedError",
    "build_filesystem",
    "normalize",
    "with_turn_scratch",
]
