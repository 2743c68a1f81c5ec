"""``POST /<slug>/v1/channels/<name>/webhook``: GitHub's deliveries to a ``github_channel``.

In this order, so that a forged or replayed delivery records nothing:

1. With a ``secret``, ``X-Hub-Signature-256`` must be ``"sha256=" + hex(hmac_sha256(secret,
   raw body))``, compared with ``hmac.compare_digest`` on the raw bytes before any parsing;
   else 401 ``invalid_signature``. A named secret that is not set refuses every delivery
   (fail closed). Without ``secret`` deliveries are admitted unsigned.
2. A body that is not a JSON object → 400. ``ping`` → 200.
3. Events that wake nobody (another event or action, a repository outside
   ``repositories``, a comment that does not mention ``@bot_name``) → 200 ignored.
4. A delivery already taken in (``X-GitHub-Hook-ID:X-GitHub-Delivery``, UNIQUE) → 200.
5. ``on_event`` (or the default message) decides; the PR's chat session (key
   ``pr:owner/repo#N``, owner the ``github`` service principal) is started or continued
   with ``coalesce`` admission, or a task session started → 202 ``{"sessionId"}``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from agent_platform.conf import platform_settings
from agents import sdk
from agents.secrets import resolve
from sessions_app import authored_channels
from sessions_app.authored_channels import ChannelAnswer, ChannelError, ChannelSender
from sessions_app.logs import agent_log_tags
from sessions_app.models import Admission, InboundDelivery, SessionMode
from sessions_app.triggers.github_progress import push_wake
from sessions_app.triggers.packs import PackCall
from sessions_app.triggers.principals import service_principal

logger = logging.getLogger(__name__)

SOURCE = "github"
PR_ACTIONS = {
    "opened": "opened",
    "reopened": "reopened",
    "synchronize": "updated with new commits",
    "ready_for_review": "marked ready for review",
}
MAX_TITLE = 200
# GitHub's owner (39) and repository (100) names; the session key must stay short.
REPOSITORY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")


@dataclass(frozen=True)
class Wake:
    """A delivery that concerns a pull request's session: which PR, and what to tell it."""

    repo: str
    number: int
    message: str
    title: str = ""
    headSha: str | None = None  # camelCase: stored as is in the wake inbox (JSON)
    comment: dict[str, Any] | None = None  # {"id", "review"}: the comment that woke the agent


def handle_webhook(call: PackCall) -> ChannelAnswer:
    """Take in one GitHub delivery (see the module docstring for the order of checks).

    Raises:
        ChannelError: 401 ``invalid_signature``, 400 ``invalid_body``, 502 when
            ``on_event`` raises or returns something else, or a refused session.
    """
    assert call.channel.pack is not None
    options = call.channel.pack.options
    headers, body = call.request.headers, call.request.body
    verify_signature(call, options.get("secret"), headers.get("x-hub-signature-256", ""), body)
    payload = _parse(body)
    event = headers.get("x-github-event", "")
    if not event:
        raise ChannelError(400, "invalid_body", "X-GitHub-Event is missing: send GitHub's webhook headers.")
    if event == "ping":
        return ChannelAnswer(200, {"status": "pong"})
    wake = wake_of(event, payload, options)
    if wake is None:
        return ChannelAnswer(200, {"status": "ignored"})
    delivery = headers.get("x-github-delivery", "")
    if not delivery:
        raise ChannelError(400, "invalid_body", "X-GitHub-Delivery is missing: send GitHub's webhook headers.")
    record = _record(call, f"{headers.get('x-github-hook-id', '')}:{delivery}")
    if record is None:
        return ChannelAnswer(200, {"status": "duplicate"})
    try:
        return _wake(call, event, payload, wake, record)
    except BaseException:
        record.delete()  # nothing happened: GitHub's redelivery may try again
        raise


def verify_signature(call: PackCall, secret_name: str | None, given: str, body: bytes) -> None:
    """Check GitHub's HMAC of the raw body, in constant time.

    Raises:
        ChannelError: 401 ``invalid_signature`` (also when the named secret is not set).
    """
    if not secret_name:
        return
    secret = resolve(secret_name, agent=call.agent)
    if secret is None:
        logger.error(
            "github pack of %s: the secret %s is not set; deliveries are refused", call.agent.slug, secret_name
        )
        raise ChannelError(401, "invalid_signature", f"The webhook secret {secret_name} is not set on the platform.")
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace")):
        raise ChannelError(401, "invalid_signature", "X-Hub-Signature-256 does not match the body.")


def _parse(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise ChannelError(
            400, "invalid_body", "The body is not JSON: set the content type to application/json."
        ) from None
    if not isinstance(payload, dict):
        raise ChannelError(400, "invalid_body", "The body must be a JSON object.")
    return payload


# --- which deliveries wake a session -----------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _mentions(text: str, bot_name: str) -> bool:
    return re.search(rf"(?<![\w-])@{re.escape(bot_name)}(?![\w-])", text, re.IGNORECASE) is not None


def wake_of(event: str, payload: dict[str, Any], options: Any) -> Wake | None:
    """The wake a delivery makes, or None when it is to be ignored."""
    repo = str(_dict(payload.get("repository")).get("full_name") or "")
    if repo and not REPOSITORY.fullmatch(repo):
        raise ChannelError(400, "invalid_body", f"repository.full_name {repo[:100]!r} is not an owner/repo name.")
    allowed = options.get("repositories")
    if not repo or (allowed is not None and repo.lower() not in allowed):
        return None
    action, sender = payload.get("action"), _dict(payload.get("sender"))
    if sender.get("type") == "Bot" and event in ("issue_comment", "pull_request_review_comment"):
        return None  # the agent's own banner, or another bot's comment
    try:
        if event == "pull_request":
            return _pull_request(repo, action, payload)
        if event == "issue_comment":
            return _issue_comment(repo, action, payload, str(options["bot_name"]))
        if event == "pull_request_review_comment":
            return _review_comment(repo, action, payload)
        if event in ("check_suite", "workflow_run") and action == "completed":
            return _ci_result(repo, event, payload, str(options["bot_name"]))
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        raise ChannelError(400, "invalid_body", f"The {event!r} payload lacks the pull request's fields.") from None
    return None


def _pull_request(repo: str, action: Any, payload: dict[str, Any]) -> Wake | None:
    if action not in PR_ACTIONS:
        return None
    pr = payload["pull_request"]
    number, title = int(pr["number"]), str(pr.get("title") or "")
    message = f"Pull request #{number} {PR_ACTIONS[action]}: {title}"
    if pr.get("body") and action != "synchronize":
        message += f"\n\n{pr['body']}"
    return Wake(repo, number, message, title, str(_dict(pr.get("head")).get("sha") or "") or None)


def _issue_comment(repo: str, action: Any, payload: dict[str, Any], bot_name: str) -> Wake | None:
    issue, comment = payload["issue"], payload["comment"]
    if action != "created" or not issue.get("pull_request"):
        return None  # an edit, a deletion, or a plain issue
    text = str(comment.get("body") or "")
    if not _mentions(text, bot_name):
        return None
    number, login = int(issue["number"]), _dict(comment.get("user")).get("login", "someone")
    return Wake(
        repo,
        number,
        f"{login} commented on pull request #{number}:\n\n{text}",
        str(issue.get("title") or ""),
        comment={"id": int(comment["id"]), "review": False},
    )


def _review_comment(repo: str, action: Any, payload: dict[str, Any]) -> Wake | None:
    if action != "created":
        return None
    pr, comment = payload["pull_request"], payload["comment"]
    number, login = int(pr["number"]), _dict(comment.get("user")).get("login", "someone")
    where = f" on {comment['path']}" if comment.get("path") else ""
    return Wake(
        repo,
        number,
        f"{login} commented{where} in pull request #{number}:\n\n{comment.get('body') or ''}",
        str(pr.get("title") or ""),
        str(_dict(pr.get("head")).get("sha") or "") or None,
        {"id": int(comment["id"]), "review": True},
    )


def _ci_result(repo: str, event: str, payload: dict[str, Any], bot_name: str) -> Wake | None:
    run = payload[event]
    if event == "check_suite" and str(_dict(run.get("app")).get("slug", "")).lower() == bot_name.lower():
        return None  # the suite of the agent's own check run: waking on it would loop
    pulls = run.get("pull_requests") or []
    if not pulls:
        return None
    number, sha, conclusion = int(pulls[0]["number"]), run.get("head_sha"), run.get("conclusion") or "completed"
    what = f"Workflow {run.get('name')!r}" if event == "workflow_run" else "The check suite"
    short = f" (head {str(sha)[:7]})" if sha else ""
    return Wake(repo, number, f"{what} finished {conclusion} on pull request #{number}{short}.", headSha=sha or None)


# --- taking a wake in ---------------------------------------------------------------------------


def _record(call: PackCall, delivery_id: str) -> InboundDelivery | None:
    """The delivery's UNIQUE row, or None when it was taken in before."""
    try:
        with transaction.atomic():
            return InboundDelivery.objects.create(agent=call.agent, source=SOURCE, delivery_id=delivery_id[:200])
    except IntegrityError:
        return None


def _wake(call: PackCall, event: str, payload: dict[str, Any], wake: Wake, record: InboundDelivery) -> ChannelAnswer:
    principal = service_principal(call.agent, SOURCE)
    sender = ChannelSender(call.agent, call.surface, principal, call.channel_name, platform_settings.DEFAULT_MODEL)
    message: Any = wake.message
    on_event = call.channel.pack.options.get("on_event") if call.channel.pack else None
    if on_event is not None:
        ctx = authored_channels.channel_context(
            call.agent, call.channel_name, sender, call.request, principal.tenant_id
        )
        tags = {"agent_slug": call.agent.slug, "tenant_id": principal.tenant_id}
        try:
            # What on_event logs (any logger) is the agent's, on its /v1/logs.
            with agent_log_tags(call.surface, agent_slug=call.agent.slug, tenant_id=principal.tenant_id):
                message = authored_channels.run_to_completion(on_event, event, payload, ctx)
        except Exception as error:  # authored code: logged and answered 502
            logger.error("on_event of channel %r failed", call.channel_name, exc_info=error, extra=tags)
            raise ChannelError(502, "channel_handler_failed", f"{type(error).__name__}: {error}") from None
    if message is None:
        return ChannelAnswer(200, {"status": "ignored"})
    if isinstance(message, dict) and isinstance(message.get("task"), str) and message["task"].strip():
        key, mode, text = None, SessionMode.TASK, message["task"]
    elif isinstance(message, str) and message.strip():
        key, mode, text = f"pr:{wake.repo}#{wake.number}", SessionMode.CHAT, message
    else:
        raise ChannelError(
            502,
            "channel_handler_failed",
            f"on_event must return None, a message or {{'task': prompt}}, not {message!r}",
        )
    title = f"{wake.repo}#{wake.number} {wake.title}".strip()[:MAX_TITLE]
    try:
        with transaction.atomic():
            sent = sender.send(text, key=key, mode=mode, title=title, admission=Admission.COALESCE)
            inbox = {"repo": wake.repo, "number": wake.number, "headSha": wake.headSha, "comment": wake.comment}
            push_wake(sent["sessionId"], call.channel_name, inbox)
            InboundDelivery.objects.filter(pk=record.pk).update(session_id=sent["sessionId"])
    except sdk.SessionRefused as refused:
        raise ChannelError(refused.status, refused.code, str(refused)) from None
    except ValueError as error:  # a message ctx.send cannot take (e.g. a blank task prompt)
        raise ChannelError(502, "channel_handler_failed", f"on_event: {error}") from None
    return ChannelAnswer(202, {"sessionId": sent["sessionId"]})
