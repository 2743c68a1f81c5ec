"""Running turns in-process against agent trees written to disk."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents.discovery import AgentSurface, discover
from agents.events import EventType
from agents.runtime.emitter import MemorySink
from agents.runtime.providers.gateway import ProviderSettings
from agents.runtime.turn import RuntimeSettings, TurnOutcome, TurnRequest, run_turn
from agents.sdk import SessionInfo
from agents.tests.runtime.model_server import ScriptedModelServer
from agents.tests.trees import write_tree

BASE = {"agent/instructions.md": "You are a test agent."}


class Harness:
    """An agent tree in a folder, and turns run against it with events kept in memory,
    through the ``test`` model directly or through a provider's SDK and wire format."""

    def __init__(self, folder: Path, settings: RuntimeSettings) -> None:
        self.folder = folder
        self.settings = settings
        self.model_id = settings.default_model
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
        return asyncio.run(run_turn(self.surface(), self.request(message, **overrides), self.sink, self.settings))

    def types(self) -> list[str]:
        return [str(event.type) for event in self.sink.events]

    def data(self, type: EventType) -> list[dict[str, Any]]:
        return [event.data for event in self.sink.of_type(type)]


@pytest.fixture(scope="session")
def model_server():
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(params=["test", "openai", "anthropic"])
def model_settings(request, model_server) -> RuntimeSettings:
    """The same turn, three ways: the test model in-process, and over HTTP through each provider's SDK."""
    if request.param == "test":
        return RuntimeSettings()
    providers = ProviderSettings(
        openai_base_url=f"{model_server.url}/v1", anthropic_base_url=model_server.url, max_retries=0
    )
    model = "openai:gpt-test" if request.param == "openai" else "anthropic:claude-test"
    return RuntimeSettings(default_model=model, providers=providers)


@pytest.fixture
def agent(tmp_path, model_settings) -> Harness:
    return Harness(tmp_path / "agent", model_settings).write(BASE)
