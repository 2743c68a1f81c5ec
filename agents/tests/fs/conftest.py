"""Fixtures that run the FileSystem contract suite against every kind.

``tree`` builds a file system holding the given files, for the read-side contract;
``writable_tree`` does the same for the kinds that can be written (not overlays).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.tests.fs.trees import KINDS, WRITABLE, TreeFactory, builders


@pytest.fixture(params=KINDS)
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> TreeFactory:
    return builders(tmp_path)[request.param]


@pytest.fixture(params=WRITABLE)
def writable_tree(request: pytest.FixtureRequest, tmp_path: Path) -> TreeFactory:
    return builders(tmp_path)[request.param]
