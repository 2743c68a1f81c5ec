"""The one chokepoint to models: pick the provider for ``provider:name``, and
retry transient failures with backoff a bounded number of times."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from agents.runtime.providers.base import ModelError, ModelProvider, ModelRequest, ProviderSettings, StreamEvent
from agents.runtime.providers.deterministic import DeterministicModel

TEST_MODEL = "test"


class UnknownModel(ModelError):
    """The model id names no provider we have."""


class MissingCredentials(ModelError):
    """A provider's model with neither its API key nor a base URL (a compatible server
    may need no key) configured."""


def missing_key(model_id: str, settings: ProviderSettings) -> str | None:
    """The environment variable ``model_id`` needs and does not have (``"OPENAI_API_KEY"``),
    or None: the ``test`` model needs none, and a base URL may point at a server that needs
    none either."""
    provider = model_id.partition(":")[0]
    if provider == "openai" and not (settings.openai_api_key or settings.openai_base_url):
        return "OPENAI_API_KEY"
    if provider == "anthropic" and not (settings.anthropic_api_key or settings.anthropic_base_url):
        return "ANTHROPIC_API_KEY"
    return None


def provider_for(model_id: str, settings: ProviderSettings) -> tuple[ModelProvider, str]:
    """The provider and the provider's model name for ``model_id``.

    Raises:
        UnknownModel: for an id that is not ``test``, ``openai:...`` or ``anthropic:...``.
        MissingCredentials: the provider's API key is not set (``missing_key``).
    """
    if model_id == TEST_MODEL:
        return DeterministicModel(), TEST_MODEL
    provider, _, name = model_id.partition(":")
    variable = missing_key(model_id, settings)
    if variable is not None and name:
        base_url = variable.replace("_API_KEY", "_BASE_URL")
        raise MissingCredentials(
            f"{variable} is not set: the model {model_id!r} needs it (or {base_url} for a compatible server "
            "that needs no key)"
        )
    if provider == "openai" and name:
        from agents.runtime.providers.openai_provider import OpenAIProvider

        return OpenAIProvider(settings), name
    if provider == "anthropic" and name:
        from agents.runtime.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(settings), name
    raise UnknownModel(f"unknown model {model_id!r}: use 'test', 'openai:<model>' or 'anthropic:<model>'")


async def stream_with_retries(
    provider: ModelProvider, request: ModelRequest, settings: ProviderSettings
) -> AsyncIterator[StreamEvent]:
    """The provider's stream; a retryable error before anything was streamed is
    retried with exponential backoff, up to ``settings.max_retries`` times."""
    attempt = 0
    while True:
        started = False
        try:
            async for event in provider.stream(request):
                started = True
                yield event
            return
        except ModelError as error:
            if started or not error.retryable or attempt >= settings.max_retries:
                raise
            await asyncio.sleep(settings.retry_base_delay * 2**attempt)
            attempt += 1
