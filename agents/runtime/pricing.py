"""What a turn cost, in USD: the one place prices come from.

Prices come from the maintained table of ``genai-prices`` (a snapshot shipped inside
the package: no network is used, and it never updates itself at run time), looked up
by the provider and model of a model id (``openai:gpt-4.1`` → provider ``openai``,
model ``gpt-4.1``). ``overrides`` (``PLATFORM["MODEL_PRICES"]``) set a model's prices
per million tokens, for a model the table lacks or prices otherwise. The ``test``
model costs nothing; a model priced nowhere gets no cost at all, never a guess.

Example::

    cost_usd("openai:gpt-4.1", Usage(input_tokens=1_000_000))   # Decimal("2.000000")
    cost_usd("openai:mine", usage, {"openai:mine": {"input": "1", "output": "2"}})
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal

import genai_prices

from agents.runtime.providers.base import Usage

logger = logging.getLogger(__name__)

MILLION = Decimal(1_000_000)
CENT_FRACTION = Decimal("0.000001")
# The model id's provider prefix → genai-prices' provider id.
PROVIDERS = {"openai": "openai", "anthropic": "anthropic"}
FREE_MODELS = frozenset({"test"})

PriceOverrides = Mapping[str, Mapping[str, str]]


def cost_usd(model_id: str, usage: Usage, overrides: PriceOverrides | None = None) -> Decimal | None:
    """The cost of ``usage`` on ``model_id``, or None when the model has no price."""
    override = (overrides or {}).get(model_id)
    if override is not None:
        total = _priced(override, usage)
    elif model_id in FREE_MODELS:
        total = Decimal(0)
    else:
        found = _from_table(model_id, usage)
        if found is None:
            return None
        total = found
    return total.quantize(CENT_FRACTION)


def has_price(model_id: str, overrides: PriceOverrides | None = None) -> bool:
    """Whether ``cost_usd`` prices ``model_id``."""
    return cost_usd(model_id, Usage(), overrides) is not None


def _priced(prices: Mapping[str, str], usage: Usage) -> Decimal:
    """``usage`` at an override's prices per million tokens (cached reads at their own
    rate, the input rate when the override names none)."""
    input_price = Decimal(prices.get("input", "0"))
    read_price = Decimal(prices.get("cacheRead", prices.get("input", "0")))
    uncached_input = max(usage.input_tokens - usage.cache_read_tokens, 0)
    return (
        uncached_input * input_price
        + usage.output_tokens * Decimal(prices.get("output", "0"))
        + usage.cache_read_tokens * read_price
        + usage.cache_write_tokens * Decimal(prices.get("cacheWrite", "0"))
    ) / MILLION


def _from_table(model_id: str, usage: Usage) -> Decimal | None:
    prefix, _, model = model_id.partition(":")
    provider = PROVIDERS.get(prefix)
    if provider is None or not model:
        return None
    # genai-prices counts cache writes inside input_tokens; ours keeps them apart.
    counted = genai_prices.Usage(
        input_tokens=usage.input_tokens + usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    try:
        return Decimal(genai_prices.calc_price(counted, model, provider_id=provider).total_price)
    except (LookupError, ValueError):  # a model or provider the table does not know
        logger.debug("no price for %s", model_id)
        return None
