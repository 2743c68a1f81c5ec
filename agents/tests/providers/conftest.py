from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents.tests.providers.wire import WireServer


@pytest.fixture
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server
