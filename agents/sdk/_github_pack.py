"""``github_channel(...)``: the GitHub pack (``channels/github.py``).

The platform serves the pack's one route, ``POST /<slug>/v1/channels/<name>/webhook``,
itself: it checks GitHub's signature, dedupes redeliveries and wakes one chat session per
pull request. This module only holds the configuration and the default ``events``
handlers, which hand each event to the platform's GitHub client (``ctx.host.github``)
so that the SDK stays importable without Django.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.sdk._definitions import Channel, Pack, _require_callable
from agents.sdk._errors import DefinitionError

PROGRESS_KINDS = ("commit_status", "banner")
# The session events the pack follows to keep its check run, banner and reactions.
TRACKED_EVENTS = ("turn.started", "message.completed", "turn.completed", "turn.failed")

GITHUB_ROUTE = "GitHub's webhook payload URL: the X-Hub-Signature-256 signature, no bearer token."


def _track(event: dict[str, Any], channel: Any, ctx: Any) -> None:
    """Default handler: the platform's client keeps the PR's check run and banner."""
    github = getattr(ctx.host, "github", None) if ctx.host is not None else None
    if github is not None:
        github.track(event, channel)


def github_channel(
    *,
    secret: str | None = None,
    token: str | None = None,
    api_url: str = "https://api.github.com",
    bot_name: str = "agent",
    reactions: bool = True,
    progress: Mapping[str, bool] | None = None,
    repositories: Sequence[str] | None = None,
    on_event: Callable[..., Any] | None = None,
    events: Mapping[str, Callable[..., Any]] | None = None,
) -> Channel:
    """The GitHub pack: pull requests, mentions and CI results wake one session per PR.

    Example (``channels/github.py``)::

        channel = github_channel(secret="GITHUB_WEBHOOK_SECRET", token="GITHUB_TOKEN", bot_name="triage")

    Args:
        secret: the *name* of the secret holding the webhook secret; without it unsigned
            deliveries are admitted (``agent validate`` warns).
        token: the name of the secret holding the API token (``Authorization: Bearer``).
        api_url: the REST API's base URL (GitHub Enterprise: ``https://HOST/api/v3``).
        bot_name: the ``@mention`` that wakes the agent from a PR comment, and the check run's name.
        reactions: put ``eyes`` on the comment that woke the agent.
        progress: ``{"commit_status": bool, "banner": bool}`` (both on by default).
        repositories: ``owner/repo`` names to serve; others are ignored (default: all).
        on_event: ``on_event(event_name, payload, ctx)`` returning None (ignore), a message
            for the PR's session, or ``{"task": prompt}`` (a new task session).
        events: ``events`` handlers, replacing the pack's default for the same event type.

    Raises:
        DefinitionError: for an unknown ``progress`` key, a repository not spelled
            ``owner/repo``, an empty ``bot_name`` or a handler that is not a function.
    """
    chosen = {kind: True for kind in PROGRESS_KINDS}
    for kind, enabled in (progress or {}).items():
        if kind not in PROGRESS_KINDS:
            raise DefinitionError(f"progress key {kind!r} is unknown; use {', '.join(PROGRESS_KINDS)}")
        chosen[kind] = bool(enabled)
    for name in repositories or ():
        if not isinstance(name, str) or name.count("/") != 1 or not all(name.split("/")):
            raise DefinitionError(f"repositories must be 'owner/repo' names, not {name!r}")
    if not isinstance(bot_name, str) or not bot_name.strip() or bot_name.startswith("@"):
        raise DefinitionError(f"bot_name must be a login without '@', not {bot_name!r}")
    if not isinstance(api_url, str) or not api_url.startswith(("https://", "http://")):
        raise DefinitionError(f"api_url must be an http(s) URL, not {api_url!r}")
    if on_event is not None:
        _require_callable(on_event, "on_event")
    for event_type, handler in (events or {}).items():
        _require_callable(handler, f"the handler for {event_type!r}")
    options = {
        "secret": secret,
        "token": token,
        "api_url": api_url.rstrip("/"),
        "bot_name": bot_name,
        "reactions": bool(reactions),
        "progress": chosen,
        "repositories": tuple(name.lower() for name in repositories) if repositories is not None else None,
        "on_event": on_event,
    }
    handlers: dict[str, Callable[..., Any]] = {event_type: _track for event_type in TRACKED_EVENTS}
    handlers.update(events or {})
    return Channel(events=handlers, pack=Pack("github", options, "/webhook", GITHUB_ROUTE))
