from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents.discovery import AgentSurface, TreeLoader, discover
from agents.tests.trees import INSTRUCTIONS, write_tree


@pytest.fixture
def build(tmp_path: Path) -> Iterator[Callable[..., AgentSurface]]:
    """Write an agent tree under ``tmp_path/<slug>`` and discover it.

    ``agent/instructions.md`` is added unless ``instructions=False``. The modules
    discovery imported are unloaded after the test.
    """
    loaders: list[TreeLoader] = []

    def make(files: dict[str, str], *, slug: str = "demo", instructions: bool = True) -> AgentSurface:
        folder = write_tree(tmp_path / slug, {**(INSTRUCTIONS if instructions else {}), **files})
        surface, loader = discover(folder)
        loaders.append(loader)
        return surface

    yield make
    for loader in loaders:
        loader.unload()
