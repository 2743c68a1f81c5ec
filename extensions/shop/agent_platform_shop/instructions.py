"""The part of the instructions that depends on the mount's config (``ctx.extension``)."""

from __future__ import annotations

from agents.sdk import ToolContext, define_instructions

from .lib.carriers import carrier_for


def render(ctx: ToolContext) -> str:
    config = ctx.extension.config if ctx.extension is not None else {}
    region, currency = config.get("region", "eu"), config.get("currency", "EUR")
    return (
        f"This shop sells in the {region.upper()} region: prices and refunds are in {currency}, "
        f"and parcels go with {carrier_for(region)}."
    )


instructions = define_instructions(render)
