"""The channel packs authors import from ``agents.sdk``: ``slack_channel``.

A pack is a ``Channel`` whose route the platform serves itself (``Channel.pack``); what
authors choose are its options (secrets by name, never values) and, if they want, their
own ``events`` handlers, which replace the pack's default for the same event type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.sdk._context import ChannelSession, HookContext
from agents.sdk._definitions import Channel, Handler, Pack, _require_callable
from agents.sdk._errors import DefinitionError

SLACK_API_URL = "https://slack.com/api"
# The turn.failed message of a stopped turn: a stop posts nothing.
TURN_INTERRUPTED = "turn interrupted"
MAX_ERROR_REPLY_CHARS = 200

SLACK_ROUTE = "Slack's Events API request URL: Slack's signature, no bearer token."


def slack_thread(channel: ChannelSession) -> tuple[str, str] | None:
    """``(channel id, thread ts)`` of a Slack pack session, from its continuation token
    ``slack:<team>/<channel>/<thread ts>``; None when the session has no thread."""
    token = channel.continuation_token or ""
    _, _, key = token.partition(":")
    parts = key.split("/")
    if len(parts) != 3 or not all(parts):
        return None
    return parts[1], parts[2]


async def _reply(channel: ChannelSession, ctx: HookContext, text: str) -> None:
    thread = slack_thread(channel)
    slack = getattr(ctx.host, "slack", None)
    if thread is None or slack is None or not text.strip():
        return
    await slack.post_message(thread[0], text, thread_ts=thread[1])


async def post_reply(event: dict[str, Any], channel: ChannelSession, ctx: HookContext) -> None:
    """Default ``message.completed`` delivery: the model's answer, in the thread."""
    await _reply(channel, ctx, str(event.get("data", {}).get("text") or ""))


async def post_failure(event: dict[str, Any], channel: ChannelSession, ctx: HookContext) -> None:
    """Default ``turn.failed`` delivery: one short error reply, except for a stop."""
    message = str(event.get("data", {}).get("message") or "")
    if message == TURN_INTERRUPTED:
        return
    short = message if len(message) <= MAX_ERROR_REPLY_CHARS else message[: MAX_ERROR_REPLY_CHARS - 1] + "…"
    await _reply(channel, ctx, f"Sorry, that failed: {short}" if short else "Sorry, that failed.")


SLACK_DEFAULT_EVENTS: Mapping[str, Handler] = {"message.completed": post_reply, "turn.failed": post_failure}


def slack_channel(
    *,
    signing_secret: str,
    bot_token: str,
    api_url: str = SLACK_API_URL,
    events: Mapping[str, Handler] | None = None,
) -> Channel:
    """A Slack app's channel (``channels/slack.py``): the platform serves
    ``POST /<slug>/v1/channels/<name>/events`` for Slack's Events API, checks Slack's
    signature with the secret named ``signing_secret``, and answers in the thread with
    the bot token named ``bot_token``. ``events`` handlers replace the defaults
    (``message.completed`` → the reply, ``turn.failed`` → a short error reply) per type.

    Example::

        channel = slack_channel(signing_secret="SLACK_SIGNING_SECRET", bot_token="SLACK_BOT_TOKEN")

    Raises:
        DefinitionError: a secret name that is empty or not a string, an ``api_url``
            that is not http(s), or a handler that is not a function.
    """
    for what, name in (("signing_secret", signing_secret), ("bot_token", bot_token)):
        if not isinstance(name, str) or not name.strip():
            raise DefinitionError(f"slack_channel {what}= must name a secret (e.g. 'SLACK_BOT_TOKEN'), not {name!r}")
    if not isinstance(api_url, str) or not api_url.startswith(("http://", "https://")):
        raise DefinitionError(f"slack_channel api_url {api_url!r} must be an http(s) URL")
    for event_type, handler in (events or {}).items():
        _require_callable(handler, f"the handler for {event_type!r}")
    options = {"signing_secret": signing_secret, "bot_token": bot_token, "api_url": api_url.rstrip("/")}
    return Channel(
        events={**SLACK_DEFAULT_EVENTS, **(events or {})}, pack=Pack("slack", options, "/events", SLACK_ROUTE)
    )
