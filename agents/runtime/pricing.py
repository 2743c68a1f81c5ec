"""What a turn cost, in USD, from one price table.

Prices are per million tokens: (input, output, cache read, cache write). A model
not in the table gets no cost at all, never a guess.
"""

from __future__ import annotations

from decimal import Decimal

from agents.runtime.providers.base import Usage

PER_MILLION: dict[str, tuple[str, str, str, str]] = {
    "test": ("0", "0", "0", "0"),
    "openai:gpt-4.1": ("2.00", "8.00", "0.50", "0"),
    "openai:gpt-4.1-mini": ("0.40", "1.60", "0.10", "0"),
    "openai:gpt-4.1-nano": ("0.10", "0.40", "0.025", "0"),
    "openai:gpt-4o": ("2.50", "10.00", "1.25", "0"),
    "openai:gpt-4o-mini": ("0.15", "0.60", "0.075", "0"),
    "anthropic:claude-sonnet-4": ("3.00", "15.00", "0.30", "3.75"),
    "anthropic:claude-opus-4": ("15.00", "75.00", "1.50", "18.75"),
    "anthropic:claude-3-5-haiku": ("0.80", "4.00", "0.08", "1.00"),
}
MILLION = Decimal(1_000_000)


def cost_usd(model_id: str, usage: Usage) -> Decimal | None:
    """The cost of ``usage`` on ``model_id``, or None when the model has no price."""
    prices = PER_MILLION.get(model_id)
    if prices is None:
        return None
    input_price, output_price, read_price, write_price = (Decimal(p) for p in prices)
    # Cached reads are billed at their own rate instead of the input rate.
    uncached_input = max(usage.input_tokens - usage.cache_read_tokens, 0)
    total = (
        uncached_input * input_price
        + usage.output_tokens * output_price
        + usage.cache_read_tokens * read_price
        + usage.cache_write_tokens * write_price
    ) / MILLION
    return total.quantize(Decimal("0.000001"))
