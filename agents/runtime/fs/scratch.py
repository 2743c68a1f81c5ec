"""The per-turn ``/tmp`` scratch mount."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from agents.runtime.fs.base import FileSystem
from agents.runtime.fs.compose import UnionFileSystem
from agents.runtime.fs.memory import MemoryFileSystem

SCRATCH_PREFIX = "/tmp"  # noqa: S108 - a path inside the agent's tree, not the host's /tmp


class TurnScratch(NamedTuple):
    """``fs`` is the turn's view (the root with ``/tmp`` on top); ``drop()`` empties the scratch
    when the turn ends."""

    fs: FileSystem
    drop: Callable[[], None]


def with_turn_scratch(fs: FileSystem) -> TurnScratch:
    """Put a fresh in-memory ``/tmp`` over ``fs`` for one turn.

    Everything at or below ``/tmp`` goes to the scratch, whatever ``fs`` has there;
    every other path goes to ``fs`` unchanged. Example::

        turn_fs, drop = with_turn_scratch(root)
        try:
            ...  # run the turn's tools against turn_fs
        finally:
            drop()
    """
    scratch = MemoryFileSystem()
    return TurnScratch(UnionFileSystem([(SCRATCH_PREFIX, scratch), ("/", fs)]), scratch.clear)
