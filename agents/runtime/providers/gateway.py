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


def provider_for(model_id: str, settings: ProviderSettings) -> tuple[ModelProvider, str]:
    """The provider and the provider's model name for ``model_id``.

    Raises:
        UnknownModel: for an id that is not ``test``, ``openai:...`` or ``anthropic:...``.
    """
    if model_id == TEST_MODEL:
        return DeterministicModel(), TEST_MODEL
    provider, _, name = model_id.partition(":")
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
