"""``ctx.host.slack``: the Slack Web API client of an agent with a Slack pack.

Calls go to the pack's ``api_url`` with ``Authorization: Bearer <bot token>`` through the
platform's outbound policy (``guarded_client``). Not ``slack_sdk.WebClient``: it sends with
urllib, around the policy; the platform's one chokepoint for outbound HTTP is httpx2's.
The bot token is resolved by name on each call, so a token set later works at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from agents.config import outbound_policy
from agents.discovery import AgentSurface
from agents.models import Agent
from agents.runtime.outbound import OutboundRefused, guarded_client
from agents.secrets import aresolve

logger = logging.getLogger(__name__)

# A failed post is retried this many times (so tried RETRIES + 1 times), after these pauses.
RETRIES = 3
RETRY_PAUSES = (0.2, 0.5, 1.0)
TIMEOUT_SECONDS = 10.0


class SlackCallFailed(Exception):
    """A Slack Web API call failed: an HTTP error, an answer that is not JSON, or ``ok: false``.
    ``error`` is Slack's error code (``channel_not_found``) or what went wrong."""

    def __init__(self, method: str, error: str) -> None:
        super().__init__(f"Slack {method} failed: {error}")
        self.method, self.error = method, error


@dataclass(frozen=True)
class SlackClient:
    """The Slack pack's API client for one agent: ``await ctx.host.slack.post_message(...)``."""

    agent: Agent
    bot_token: str  # the secret's name
    api_url: str

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One Web API call (``chat.postMessage``, ``reactions.add``...) with JSON ``params``;
        Slack's answer.

        Raises:
            SlackCallFailed: an HTTP error, no JSON, ``ok: false`` or no bot token set.
        """
        token = await aresolve(self.bot_token, agent=self.agent)
        if token is None:
            raise SlackCallFailed(method, f"the bot token secret {self.bot_token} is not set")
        try:
            async with guarded_client(outbound_policy(), timeout=TIMEOUT_SECONDS) as client:
                response = await client.post(
                    f"{self.api_url}/{method}",
                    json=params,
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json; charset=utf-8"},
                )
        except (httpx2.HTTPError, OutboundRefused) as error:
            raise SlackCallFailed(method, f"{type(error).__name__}: {error}") from None
        if response.status_code >= 400:
            raise SlackCallFailed(method, f"HTTP {response.status_code}")
        try:
            answer = response.json()
        except ValueError:
            raise SlackCallFailed(method, "the answer is not JSON") from None
        if not isinstance(answer, dict) or not answer.get("ok"):
            code = answer.get("error") if isinstance(answer, dict) else None
            raise SlackCallFailed(method, str(code or "ok is not true"))
        return answer

    async def post_message(self, channel: str, text: str, thread_ts: str | None = None) -> dict[str, Any]:
        """``chat.postMessage`` (in the thread ``thread_ts`` when given), retried up to
        ``RETRIES`` times; each failure is logged with Slack's error.

        Raises:
            SlackCallFailed: the last failure, once the retries are spent.
        """
        params: dict[str, Any] = {"channel": channel, "text": text}
        if thread_ts:
            params["thread_ts"] = thread_ts
        last = SlackCallFailed("chat.postMessage", "not tried")
        for attempt in range(RETRIES + 1):
            try:
                return await self.call("chat.postMessage", **params)
            except SlackCallFailed as failed:
                last = failed
                logger.error(
                    "Slack chat.postMessage to %s failed (attempt %d of %d): %s",
                    channel,
                    attempt + 1,
                    RETRIES + 1,
                    failed.error,
                    extra={"agent_slug": self.agent.slug, "tenant_id": self.agent.tenant_id},
                )
            if attempt < RETRIES:
                await asyncio.sleep(RETRY_PAUSES[min(attempt, len(RETRY_PAUSES) - 1)])
        raise last


def slack_client(agent: Agent, options: Mapping[str, Any]) -> SlackClient:
    return SlackClient(agent, str(options["bot_token"]), str(options["api_url"]))


def slack_client_for(agent: Agent, surface: AgentSurface) -> SlackClient | None:
    """The client of the agent's (first) Slack pack channel; None when it has none."""
    found = surface.pack_channel("slack")
    return None if found is None or found[1].pack is None else slack_client(agent, found[1].pack.options)
