"""``web``: the shop's help widget.

``POST .../channels/web/ask`` ``{"question": ..., "conversation"?: ...}`` puts the
question to the support agent: a new session, or the widget's ongoing conversation
when it passes the same ``conversation`` id again (201 new, 202 continued; the
answer is ``{sessionId, continuationToken, turnId}`` to stream from). The widget runs on
the shop's own site, another origin: ``cors_origins`` lets its pages call the route.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agents.sdk import ChannelContext, Route, define_channel


class AskBody(BaseModel):
    """What the help widget posts."""

    question: str = Field(min_length=1, max_length=2000)
    conversation: str | None = Field(
        default=None, min_length=1, max_length=100, description="The widget's conversation id, to continue it."
    )


async def ask(ctx: ChannelContext, body: AskBody) -> dict[str, str]:
    """Put a customer's question to the support agent."""
    question = body.question.strip()
    key = f"widget:{body.conversation}" if body.conversation else None
    return await ctx.send(question, key=key, title=question[:80])


channel = define_channel(
    routes=[Route("POST", "/ask", handler=ask, body=AskBody, description="Ask the support agent a question.")],
    # The shop's site, where the widget's page lives (here: the shop's dev server). Its
    # pages may call /ask and then follow the session they started (CORS).
    cors_origins=["http://localhost:8080"],
)
