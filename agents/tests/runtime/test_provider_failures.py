"""A provider that refuses or breaks ends the turn as turn.failed with a clear message."""

from __future__ import annotations

import asyncio

import pytest

from agents.events import EventType
from agents.runtime.emitter import MemorySink
from agents.runtime.providers.gateway import ProviderSettings
from agents.runtime.turn import RuntimeSettings, run_turn
from agents.tests.providers.wire import WireServer, failure, stream
from agents.tests.runtime.conftest import BASE, Harness


@pytest.fixture
def agent(tmp_path) -> Harness:
    """One tree; each test points the turn at its own failing server."""
    return Harness(tmp_path / "agent", RuntimeSettings()).write(BASE)


@pytest.mark.parametrize(
    ("model", "reply", "expected"),
    [
        ("openai:gpt-test", failure(401, {"error": {"message": "bad key"}}), "authentication"),
        ("openai:gpt-test", failure(429, {"error": {"message": "slow down"}}), "rate"),
        (
            "anthropic:claude-test",
            failure(500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}),
            "500",
        ),
        ("openai:gpt-test", stream(b"data: {not json\n\n"), "openai"),
    ],
)
def test_a_provider_failure_fails_the_turn_with_its_reason(agent, model, reply, expected):
    with WireServer() as server:
        server.script(reply)
        settings = RuntimeSettings(
            default_model=model,
            providers=ProviderSettings(
                openai_base_url=f"{server.url}/v1", anthropic_base_url=server.url, max_retries=0, timeout=5
            ),
        )
        sink = MemorySink()
        outcome = asyncio.run(run_turn(agent.surface(), agent.request("hello"), sink, settings))
    assert outcome.status == "failed"
    [failed] = [event.data for event in sink.of_type(EventType.TURN_FAILED)]
    assert expected in failed["message"].lower()
    assert [str(e.type) for e in sink.events][-1] == "turn.failed"


def test_a_transient_failure_is_retried_and_the_turn_completes(agent):
    from agents.tests.providers import openai_frames as frames

    with WireServer() as server:
        server.script(
            failure(503, {"error": {"message": "busy"}}),
            stream(frames.chunk({"content": "hi there"}), frames.FINISH, frames.DONE),
        )
        settings = RuntimeSettings(
            default_model="openai:gpt-test",
            providers=ProviderSettings(openai_base_url=f"{server.url}/v1", max_retries=2, retry_base_delay=0.01),
        )
        outcome = asyncio.run(run_turn(agent.surface(), agent.request("hello"), MemorySink(), settings))
        assert len(server.requests) == 2
    assert outcome.status == "completed" and outcome.text == "hi there"
