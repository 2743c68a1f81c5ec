"""``web``: a minimal JSON endpoint for the shop's help widget (``POST .../channels/web/ask``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agents.sdk import ChannelContext, Route, define_channel


class AskBody(BaseModel):
    """What the help widget posts."""

    question: str = Field(min_length=1, max_length=2000)


async def ask(ctx: ChannelContext, body: AskBody) -> dict[str, Any]:
    """Accept a customer's question for the support agent."""
    return {"agent": ctx.agent, "channel": ctx.channel, "message": body.question.strip()}


channel = define_channel(
    routes=[Route("POST", "/ask", handler=ask, body=AskBody, description="Ask the support agent a question.")]
)
