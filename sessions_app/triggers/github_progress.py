"""What the GitHub pack shows on the pull request while the agent works on it.

The webhook (``triggers.github``) leaves each wake (the PR, its head SHA, the comment that
woke the agent) in an inbox row of its own, in the transaction that starts or continues
the session; the pack's ``turn.started`` handler takes the wakes out on the worker. The
inbox is a ``ChannelState`` row beside the channel's own (``"<channel>#wakes"``, a name no
channel can have) because the dispatcher overwrites the channel's state after each
handler: a wake written into it while a handler runs would be lost.

Per turn, in ``channel.state``:

- ``commit_status``: a check run named ``bot_name`` on the PR's head SHA, created
  ``in_progress`` at ``turn.started`` and completed ``success``/``failure`` at the turn's
  end. A later turn on the same SHA gets a new one; no head SHA known, no check run.
- ``banner``: one sticky PR comment, created on the first wake, edited in place after.
- ``reactions``: ``eyes`` on the comment that woke the agent.

Every GitHub call that fails is logged and skipped: it never fails the turn, nor the
other calls of the same event.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import httpx2
from asgiref.sync import async_to_sync
from django.db import transaction

from agents import sdk
from agents.discovery import AgentSurface
from agents.models import Agent
from agents.runtime.outbound import OutboundRefused
from sessions_app.models import ChannelState
from sessions_app.triggers.github_api import GitHubClient, GitHubError

logger = logging.getLogger("agent_platform.hooks")

INBOX_SUFFIX = "#wakes"
MAX_WAKES = 20  # a burst of wakes coalesced into one turn keeps its latest
BANNER_MARK = "<!-- agent-platform:banner -->"
MAX_SUMMARY_CHARS = 60_000  # GitHub caps a check run's output summary at 65,535

T = TypeVar("T")


# --- the inbox of wakes ---------------------------------------------------------------------


def push_wake(session_id: str, channel: str, wake: dict[str, Any]) -> None:
    """Leave a wake for the session's next ``turn.started`` (call inside the transaction
    that queued the turn, so the worker cannot start it before the wake is there)."""
    row, _ = ChannelState.objects.select_for_update().get_or_create(
        session_id=session_id, channel=channel + INBOX_SUFFIX, defaults={"state": {"wakes": []}}
    )
    wakes = [*row.state.get("wakes", []), wake][-MAX_WAKES:]
    row.state = {"wakes": wakes}
    row.save(update_fields=["state", "updated_at"])


def take_wakes(session_id: str, channel: str) -> list[dict[str, Any]]:
    """The wakes left since the last turn started, oldest first; the inbox is emptied."""
    with transaction.atomic():
        row = ChannelState.objects.select_for_update().filter(session_id=session_id, channel=channel + INBOX_SUFFIX)
        found = row.first()
        if found is None or not found.state.get("wakes"):
            return []
        wakes: list[dict[str, Any]] = list(found.state["wakes"])
        found.state = {"wakes": []}
        found.save(update_fields=["state", "updated_at"])
    return wakes


# --- following the session's events -----------------------------------------------------------


def track(client: GitHubClient, event: dict[str, Any], channel: sdk.ChannelSession) -> None:
    """One event of the session, as the pack's default handlers see it."""
    kind = event["type"]
    if kind == "turn.started":
        _turn_started(client, channel)
    elif kind == "message.completed":
        text = (event.get("data") or {}).get("text")
        if text:
            channel.state["reply"] = text
    elif kind in ("turn.completed", "turn.failed"):
        failure = None if kind == "turn.completed" else str((event.get("data") or {}).get("message", "failed"))
        _turn_ended(client, channel, failure)


def _attempt(what: str, client: GitHubClient, call: Callable[[], Awaitable[T]]) -> T | None:
    """Run one GitHub call; a failure is logged (never raised into the turn)."""

    async def run() -> T:
        return await call()

    try:
        return async_to_sync(run)()
    except (GitHubError, OutboundRefused, httpx2.HTTPError) as error:
        logger.warning("github pack of %s: %s failed: %s", client.agent.slug, what, error)
        return None


def _turn_started(client: GitHubClient, channel: sdk.ChannelSession) -> None:
    state = channel.state
    options = client.options
    state.pop("reply", None)
    for wake in take_wakes(channel.session_id, channel.id):
        state["repo"], state["number"] = wake["repo"], wake["number"]
        if wake.get("headSha"):
            state["headSha"] = wake["headSha"]
        comment = wake.get("comment")
        if options["reactions"] and comment:
            _attempt(
                "the eyes reaction",
                client,
                partial(client.react, wake["repo"], comment["id"], "eyes", review=bool(comment.get("review"))),
            )
    repo, number = state.get("repo"), state.get("number")
    if not repo or not number:
        return  # not a pull request's session (yet)
    progress = options["progress"]
    if progress["banner"]:
        _banner(client, state, f"**{client.bot_name}** is working on this pull request.")
    sha = state.get("headSha")
    if progress["commit_status"] and sha:
        run = _attempt(
            "creating the check run",
            client,
            lambda: client.create_check_run(
                repo, sha, status="in_progress", output={"title": "Working", "summary": "The agent is working."}
            ),
        )
        if run is not None and "id" in run:
            state["checkRun"] = {"id": run["id"], "sha": sha}


def _turn_ended(client: GitHubClient, channel: sdk.ChannelSession, failure: str | None) -> None:
    state = channel.state
    repo = state.get("repo")
    if not repo:
        return
    progress = client.options["progress"]
    reply = str(state.get("reply") or "")
    check = state.pop("checkRun", None)
    if progress["commit_status"] and check:
        title = "Done" if failure is None else "Failed"
        summary = (reply if failure is None else failure) or title
        _attempt(
            "completing the check run",
            client,
            lambda: client.update_check_run(
                repo,
                check["id"],
                status="completed",
                conclusion="success" if failure is None else "failure",
                output={"title": title, "summary": summary[:MAX_SUMMARY_CHARS]},
            ),
        )
    if progress["banner"]:
        if failure is None:
            text = f"**{client.bot_name}**: {reply}" if reply else f"**{client.bot_name}** finished."
        else:
            text = f"**{client.bot_name}** could not finish: {failure}"
        _banner(client, state, text)


def _banner(client: GitHubClient, state: dict[str, Any], text: str) -> None:
    """Create the PR's sticky comment, or edit it in place once it exists."""
    body = f"{BANNER_MARK}\n{text}"
    repo, number, banner_id = state["repo"], state["number"], state.get("bannerId")
    if banner_id:
        _attempt("editing the banner", client, lambda: client.edit_comment(repo, banner_id, body))
        return
    made = _attempt("creating the banner", client, lambda: client.comment(repo, number, body))
    if made is not None and "id" in made:
        state["bannerId"] = made["id"]


class PackClient(GitHubClient):
    """``ctx.host.github``: the API client, and the progress the pack's default ``events``
    handlers keep with ``track``."""

    def track(self, event: dict[str, Any], channel: sdk.ChannelSession) -> None:
        """Keep the PR's check run, banner and reactions in step with the session's turns."""
        track(self, event, channel)


def github_client_for(agent: Agent, surface: AgentSurface, channel: str | None = None) -> PackClient | None:
    """``ctx.host.github`` for code of ``agent`` (on ``channel``); None without the pack."""
    found = surface.pack_channel("github", channel)
    if found is None:
        return None
    name, pack = found
    assert pack.pack is not None
    return PackClient(agent, name, pack.pack.options)
