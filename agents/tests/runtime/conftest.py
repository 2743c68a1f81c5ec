"""Running turns in-process against agent trees written to disk."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents.discovery import AgentSurface, discover
from agents.runtime.events import MemorySink
from agents.runtime.turn import TurnOutcome, TurnRequest, run_turn
from agents.sdk import SessionInfo
from agents.tests.trees import write_tree
from sessions_app.events import EventType

BASE = {"agent/instructions.md": "You are a test agent."}


class Harness:
    """An agent tree in a folder, and turns run against it with events kept in memory."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.sink = MemorySink()

    def write(self, files: dict[str, str]) -> Harness:
        write_tree(self.folder, files)
        return self

    def surface(self) -> AgentSurface:
        surface, _ = discover(self.folder, "agent")
        assert not surface.errors, [str(d) for d in surface.errors]
        return surface

    def request(self, message: str, **overrides: Any) -> TurnRequest:
        session = overrides.pop("session", SessionInfo(id="ses_test", agent="agent"))
        return TurnRequest(session=session, turn_id="turn_test", message=message, **overrides)

    def run(self, message: str, **overrides: Any) -> TurnOutcome:
        return asyncio.run(run_turn(self.surface(), self.request(message, **overrides), self.sink))

    def types(self) -> list[str]:
        return [str(event.type) for event in self.sink.events]

    def data(self, type: EventType) -> list[dict[str, Any]]:
        return [event.data for event in self.sink.of_type(type)]


@pytest.fixture
def agent(tmp_path) -> Harness:
    return Harness(tmp_path / "agent").write(BASE)
