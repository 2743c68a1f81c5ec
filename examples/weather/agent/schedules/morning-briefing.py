"""Every morning, one briefing per city on the watch list (a handler schedule).

The watch list is ``ctx.host.kv["watchlist"]`` (a list of city names, Paris by default);
each city's briefing continues that city's chat session (``key``), so yesterday's briefing
is in the conversation when today's is written.
"""

from __future__ import annotations

from typing import Any

from agents.sdk import define_schedule

DEFAULT_WATCHLIST = ["Paris"]


async def brief_each_city(args: Any) -> None:
    cities = await args.host.kv.get("watchlist", DEFAULT_WATCHLIST)
    for city in cities:
        await args.send(
            f"Morning briefing for {city}: today's forecast, and what changed since yesterday's briefing.",
            key=f"briefing:{city.lower()}",
            mode="chat",
            title=f"{city} morning briefing",
        )


schedule = define_schedule(
    cron="0 6 * * *", handler=brief_each_city, description="06:00 UTC: a briefing per city on the watch list."
)
