"""What a turn costs: the maintained price table (genai-prices, offline), the per-model
overrides (``PLATFORM["MODEL_PRICES"]``), and no cost for a model priced nowhere."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.events import EventType
from agents.runtime.pricing import cost_usd
from agents.runtime.providers.base import Usage
from agents.runtime.providers.gateway import ProviderSettings
from agents.runtime.turn import RuntimeSettings
from agents.tests.runtime.conftest import BASE, Harness

MILLION = Usage(input_tokens=1_000_000, output_tokens=1_000_000)


def harness(tmp_path, model_server, model: str, **settings) -> Harness:
    providers = ProviderSettings(openai_base_url=f"{model_server.url}/v1", anthropic_base_url=model_server.url)
    return Harness(tmp_path / "agent", RuntimeSettings(default_model=model, providers=providers, **settings)).write(
        BASE
    )


def completed_cost(agent: Harness) -> tuple[dict, float | None]:
    [completed] = agent.data(EventType.TURN_COMPLETED)
    return completed["usage"], completed["cost"]


@pytest.mark.parametrize("model", ["openai:gpt-5", "anthropic:claude-haiku-4-5"])
def test_a_turn_on_a_model_outside_the_old_eight_is_priced(tmp_path, model_server, model):
    agent = harness(tmp_path, model_server, model)
    agent.run("hello")
    usage, cost = completed_cost(agent)
    assert usage["inputTokens"] > 0 and cost is not None and cost > 0
    recorded = Usage(input_tokens=usage["inputTokens"], output_tokens=usage["outputTokens"])
    assert Decimal(str(cost)) == cost_usd(model, recorded)


def test_an_override_prices_a_model_the_table_lacks(tmp_path, model_server):
    agent = harness(
        tmp_path, model_server, "openai:gpt-test", price_overrides={"openai:gpt-test": {"input": "1000000"}}
    )
    agent.run("hello")
    usage, cost = completed_cost(agent)
    assert cost == float(usage["inputTokens"])  # a dollar a token


def test_without_an_override_an_unknown_model_has_no_cost(tmp_path, model_server):
    agent = harness(tmp_path, model_server, "openai:gpt-test")
    agent.run("hello")
    assert completed_cost(agent)[1] is None


def test_table_prices_and_overrides():
    assert cost_usd("openai:gpt-4.1", MILLION) == Decimal("10.000000")  # $2 in, $8 out per million
    assert cost_usd("anthropic:claude-sonnet-4", MILLION) == Decimal("18.000000")
    cached = Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000)
    assert cost_usd("openai:gpt-4.1", cached) == Decimal("0.500000")  # cached reads at their own rate
    written = Usage(cache_write_tokens=1_000_000)
    assert cost_usd("anthropic:claude-sonnet-4", written) == Decimal("3.750000")
    override = {"openai:gpt-4.1": {"input": "1", "output": "2", "cacheRead": "0.5"}}
    assert cost_usd("openai:gpt-4.1", MILLION, override) == Decimal("3.000000")
    assert cost_usd("test", MILLION) == Decimal(0)
    assert cost_usd("openai:no-such-model", MILLION) is None
    assert cost_usd("mystery:gpt-4.1", MILLION) is None
