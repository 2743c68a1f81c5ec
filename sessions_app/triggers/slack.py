"""The Slack pack's route, ``POST /<slug>/v1/channels/<name>/events`` (Slack's Events API).

Order matters: the signature is checked on the raw bytes first (``slack_sdk``'s
``SignatureVerifier``: ``v0=hex(hmac_sha256(secret, "v0:<ts>:<body>"))`` compared with
``hmac.compare_digest``, and ``|now - ts| <= 300`` s), then the body is parsed. Nothing is
recorded for a refused delivery. An ``event_callback`` is taken once per ``event_id`` (an
``InboundDelivery`` row, UNIQUE per agent and source): Slack retries and replays answer
200 and do nothing. The answer comes at once; the turn runs on a worker.

Handled events: ``app_mention`` and ``message`` in a DM (``channel_type == "im"``); events
from bots or with a ``subtype`` (edits, joins...) are ignored. Each thread is one chat
session keyed ``<team>/<channel>/<thread ts or ts>`` of the ``slack`` service principal,
with ``coalesce`` admission. A message that is just ``stop`` interrupts the thread's turn
and drops its queued ones.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from django.db import IntegrityError, transaction
from slack_sdk.signature import SignatureVerifier

from agent_platform.conf import platform_settings
from agent_platform.models import Principal
from agents import sdk
from agents.models import Agent
from agents.secrets import resolve
from sessions_app import services
from sessions_app.authored_channels import ChannelAnswer, ChannelError, ChannelSender
from sessions_app.models import Admission, InboundDelivery, Session, SessionMode
from sessions_app.triggers.packs import PackCall
from sessions_app.triggers.principals import service_principal

logger = logging.getLogger(__name__)

SOURCE = "slack"
HANDLED = frozenset({"app_mention", "message"})
STOP = "stop"
MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
MAX_TITLE_CHARS = 80


def invalid_signature() -> ChannelError:
    return ChannelError(401, "invalid_signature", "The Slack signature or its timestamp is not valid.")


def verify(agent: Agent, options: Any, body: bytes, headers: dict[str, str]) -> None:
    """Check Slack's signature of the raw ``body``.

    Raises:
        ChannelError: 401 ``invalid_signature`` (also when the signing secret is not set,
            which is logged: no delivery can pass then).
    """
    name = str(options["signing_secret"])
    secret = resolve(name, agent=agent)
    if secret is None:
        logger.error(
            "Slack pack of agent %r: the signing secret %s is not set; every delivery is refused",
            agent.slug,
            name,
            extra={"agent_slug": agent.slug, "tenant_id": agent.tenant_id},
        )
        raise invalid_signature()
    timestamp, signature = headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature")
    try:
        valid = SignatureVerifier(secret).is_valid(body, timestamp, signature)
    except ValueError:  # a timestamp that is not an integer
        valid = False
    if not valid:
        raise invalid_signature()


def parse(body: bytes) -> dict[str, Any]:
    """The JSON object of a signed body.

    Raises:
        ChannelError: 400 ``invalid_body`` for anything but a JSON object.
    """
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise ChannelError(400, "invalid_body", "The body is not JSON.") from None
    if not isinstance(data, dict):
        raise ChannelError(400, "invalid_body", "The body must be a JSON object.")
    return data


def handle_events(call: PackCall) -> ChannelAnswer:
    """One delivery from Slack; see the module docstring for what each kind does.

    Raises:
        ChannelError: 401 ``invalid_signature``; 400 ``invalid_body`` for a malformed body.
    """
    assert call.channel.pack is not None
    verify(call.agent, call.channel.pack.options, call.request.body, call.request.headers)
    data = parse(call.request.body)
    kind = data.get("type")
    if kind == "url_verification":
        challenge = data.get("challenge")
        if not isinstance(challenge, str):
            raise ChannelError(400, "invalid_body", "url_verification needs a string challenge.")
        return ChannelAnswer(200, {"challenge": challenge})
    if kind != "event_callback":
        return ChannelAnswer(200, {"ok": True, "ignored": True})
    return take_event(call, data)


def _text_field(data: dict[str, Any], name: str, where: str = "") -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ChannelError(400, "invalid_body", f"{where}{name} must be a non-empty string.")
    return value


def wanted(event: dict[str, Any]) -> bool:
    """An event the pack answers: a mention, or a DM; never a bot's or an edit/join."""
    if event.get("bot_id") or event.get("subtype"):
        return False
    if event.get("type") == "app_mention":
        return True
    return event.get("type") == "message" and event.get("channel_type") == "im"


def bot_user_ids(data: dict[str, Any]) -> set[str]:
    """The app's own user ids, from the delivery's ``authorizations``."""
    found = data.get("authorizations")
    if not isinstance(found, list):
        return set()
    return {str(a["user_id"]) for a in found if isinstance(a, dict) and a.get("is_bot") and a.get("user_id")}


def session_text(event: dict[str, Any], bots: set[str]) -> str:
    """The text without the bot's mention (the first mention of an ``app_mention`` when
    the delivery does not say who the bot is)."""
    text = str(event.get("text") or "")
    if bots:
        text = MENTION.sub(lambda match: "" if match.group(1) in bots else match.group(0), text)
    elif event.get("type") == "app_mention":
        text = MENTION.sub("", text, count=1)
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
    # Slack escapes these three in message text.
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def take_event(call: PackCall, data: dict[str, Any]) -> ChannelAnswer:
    """An ``event_callback``: deduped by ``event_id``, then started, continued or stopped."""
    event_id = _text_field(data, "event_id")
    event = data.get("event")
    if not isinstance(event, dict):
        raise ChannelError(400, "invalid_body", "event must be an object.")
    if not wanted(event):
        return ChannelAnswer(200, {"ok": True, "ignored": True})
    team = _text_field(data, "team_id")
    channel = _text_field(event, "channel", "event.")
    ts = _text_field(event, "ts", "event.")
    thread_ts = event.get("thread_ts")
    if thread_ts is not None and (not isinstance(thread_ts, str) or not thread_ts):
        raise ChannelError(400, "invalid_body", "event.thread_ts must be a non-empty string.")
    key = f"{team}/{channel}/{thread_ts or ts}"
    text = session_text(event, bot_user_ids(data))
    principal = service_principal(call.agent, SOURCE)
    with transaction.atomic():
        try:
            with transaction.atomic():
                delivery = InboundDelivery.objects.create(agent=call.agent, source=SOURCE, delivery_id=event_id[:200])
        except IntegrityError:  # a retry or a replay of a delivery taken before
            return ChannelAnswer(200, {"ok": True, "duplicate": True})
        if text.lower() == STOP:
            return ChannelAnswer(200, {"ok": True, "stopped": stop_thread(call, principal, key)})
        if not text:
            return ChannelAnswer(200, {"ok": True, "ignored": True})
        sender = ChannelSender(call.agent, call.surface, principal, call.channel_name, platform_settings.DEFAULT_MODEL)
        try:
            sent = sender.send(
                text, key=key, mode=SessionMode.CHAT, title=text[:MAX_TITLE_CHARS], admission=Admission.COALESCE
            )
        except ValueError as error:  # e.g. a key longer than a session key can be
            raise ChannelError(400, "invalid_body", str(error)) from None
        except sdk.SessionRefused as refused:
            raise ChannelError(refused.status, refused.code, str(refused)) from None
        InboundDelivery.objects.filter(pk=delivery.pk).update(session_id=sent["sessionId"])
    return ChannelAnswer(200, {"ok": True, "sessionId": sent["sessionId"]})


def stop_thread(call: PackCall, principal: Principal, key: str) -> bool:
    """Interrupt the thread's turn and drop its queue; False when nothing was running."""
    session = Session.objects.filter(
        agent=call.agent, principal=principal, channel=call.channel_name, continuation_key=key
    ).first()
    if session is None:
        return False
    return services.stop_session(session, drop_queued=True)
