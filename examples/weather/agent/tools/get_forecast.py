"""``get_forecast``: a short daily forecast for a city."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agents.sdk import ToolContext, tool

from ..lib.forecast import as_report, forecast


@tool(effect="read")
async def get_forecast(
    ctx: ToolContext,
    city: str,
    days: Annotated[int, Field(ge=1, le=7)] = 3,
    units: Literal["c", "f"] = "c",
) -> list[dict[str, Any]]:
    """Daily weather forecast for a city, starting tomorrow.

    Args:
        city: City name, e.g. "Lyon" or "New York".
        days: Number of days to forecast, from 1 to 7.
        units: Temperature units: "c" for Celsius, "f" for Fahrenheit.
    """
    days_out = forecast(city, days)
    return [{"day": day, **as_report(conditions, units)} for day, conditions in enumerate(days_out, start=1)]
