"""``get_weather``: current conditions for a city."""

from __future__ import annotations

from typing import Any, Literal

from agents.sdk import ToolContext, tool

from ..lib.forecast import as_report, lookup


@tool(effect="read")
async def get_weather(ctx: ToolContext, city: str, units: Literal["c", "f"] = "c") -> dict[str, Any]:
    """Current weather conditions for a city: condition, temperature, humidity and wind.

    Args:
        city: City name, e.g. "Lyon" or "New York".
        units: Temperature units: "c" for Celsius, "f" for Fahrenheit.
    """
    return as_report(lookup(city), units)
