"""The gateway: picking a provider for a model id, and retrying transient failures over real HTTP."""

from __future__ import annotations

import pytest

from agents.runtime.providers.anthropic_provider import AnthropicProvider
from agents.runtime.providers.base import ModelAuthError, ModelUnavailable, StreamEvent, TextDelta
from agents.runtime.providers.deterministic import DeterministicModel
from agents.runtime.providers.gateway import (
    MissingCredentials,
    ProviderSettings,
    UnknownModel,
    provider_for,
    stream_with_retries,
)
from agents.runtime.providers.openai_provider import OpenAIProvider
from agents.tests.providers import anthropic_frames, openai_frames
from agents.tests.providers.samples import hello
from agents.tests.providers.wire import Reply, WireServer, failure, stream

FAST_RETRIES = {"max_retries": 2, "retry_base_delay": 0.01}


def test_provider_for_picks_the_provider_by_prefix() -> None:
    settings = ProviderSettings(openai_api_key="sk-test", anthropic_api_key="sk-ant-test")
    test, name = provider_for("test", settings)
    assert isinstance(test, DeterministicModel) and name == "test"
    openai, name = provider_for("openai:x", settings)
    assert isinstance(openai, OpenAIProvider) and name == "x"
    anthropic, name = provider_for("anthropic:y", settings)
    assert isinstance(anthropic, AnthropicProvider) and name == "y"
    for unknown in ("gemini:z", "openai:", "gpt-4o"):
        with pytest.raises(UnknownModel, match=repr(unknown)):
            provider_for(unknown, settings)


def test_a_provider_without_its_key_or_a_base_url_is_refused_naming_the_variable() -> None:
    with pytest.raises(MissingCredentials, match=r"^OPENAI_API_KEY is not set: the model 'openai:x' needs it"):
        provider_for("openai:x", ProviderSettings())
    with pytest.raises(MissingCredentials, match=r"^ANTHROPIC_API_KEY is not set"):
        provider_for("anthropic:y", ProviderSettings(openai_api_key="sk-test"))
    # A base URL may point at a compatible server that needs no key (Ollama, vLLM).
    openai, _ = provider_for("openai:x", ProviderSettings(openai_base_url="http://127.0.0.1:9/v1"))
    assert isinstance(openai, OpenAIProvider)


def openai_setup(server: WireServer) -> tuple[OpenAIProvider, ProviderSettings, Reply]:
    settings = ProviderSettings(openai_api_key="sk-test", openai_base_url=f"{server.url}/v1", **FAST_RETRIES)
    ok = stream(openai_frames.chunk({"content": "hi"}), openai_frames.FINISH, openai_frames.DONE)
    return OpenAIProvider(settings), settings, ok


def anthropic_setup(server: WireServer) -> tuple[AnthropicProvider, ProviderSettings, Reply]:
    settings = ProviderSettings(anthropic_api_key="sk-ant-test", anthropic_base_url=server.url, **FAST_RETRIES)
    ok = stream(
        anthropic_frames.message_start(), *anthropic_frames.text_block(0, "hi"), *anthropic_frames.message_end()
    )
    return AnthropicProvider(settings), settings, ok


SETUPS = pytest.mark.parametrize("setup", [openai_setup, anthropic_setup], ids=["openai", "anthropic"])
# Both SDKs read the message from the body's ``error`` object.
SERVER_ERROR = anthropic_frames.api_error("api_error", "try again")
AUTH_ERROR = anthropic_frames.api_error("authentication_error", "bad key")


async def drain_with_retries(provider, settings: ProviderSettings) -> list[StreamEvent]:
    return [event async for event in stream_with_retries(provider, hello("m"), settings)]


@SETUPS
@pytest.mark.asyncio
async def test_a_500_is_retried_and_the_retry_succeeds(wire: WireServer, setup) -> None:
    provider, settings, ok = setup(wire)
    wire.script(failure(500, SERVER_ERROR), ok)
    events = await drain_with_retries(provider, settings)
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("hi")]
    assert len(wire.requests) == 2


@SETUPS
@pytest.mark.asyncio
async def test_retries_stop_at_max_retries(wire: WireServer, setup) -> None:
    provider, settings, _ = setup(wire)
    wire.script(*(failure(500, SERVER_ERROR) for _ in range(4)))
    with pytest.raises(ModelUnavailable, match="try again"):
        await drain_with_retries(provider, settings)
    assert len(wire.requests) == 3  # the first try and two retries


@SETUPS
@pytest.mark.asyncio
async def test_a_401_is_not_retried(wire: WireServer, setup) -> None:
    provider, settings, ok = setup(wire)
    wire.script(failure(401, AUTH_ERROR), ok)
    with pytest.raises(ModelAuthError, match="bad key"):
        await drain_with_retries(provider, settings)
    assert len(wire.requests) == 1
