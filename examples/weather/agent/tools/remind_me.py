"""``remind_me``: come back to this conversation later (a reminder of the session)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from agents.sdk import ToolContext, tool

WEEK_SECONDS = 7 * 24 * 3600


@tool(effect="write")
async def remind_me(
    ctx: ToolContext, message: str, delay_seconds: Annotated[int, Field(ge=1, le=WEEK_SECONDS)]
) -> dict[str, Any]:
    """Leave a reminder for this conversation: ``message`` comes back as a follow-up
    after ``delay_seconds``, e.g. "check the forecast for Lyon again" in 3600 seconds.

    Args:
        message: What to be reminded of.
        delay_seconds: How long from now, in seconds (at most a week).
    """
    reminders = ctx.host.reminders if ctx.host is not None else None
    if reminders is None:
        raise ValueError("remind_me needs a session: call it in a conversation")
    return await reminders.create(message, delay=delay_seconds)
