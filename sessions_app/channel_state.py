"""``channel.state`` and the continuation token of a channel's sessions (DESIGN §9.2).

A channel's ``events`` handler gets a ``ChannelSession``: its ``state`` dict is loaded
from ``ChannelState`` before the handler and saved after it (even when it raised: what
it changed before raising is kept, like a ``ctx.send`` it made); a
``set_continuation_token(key)`` re-keys the session on its channel.

A channel session's continuation token is ``f"{channel}:{key}"`` (``slack:T1/C9/1712.0001``),
while the session can take follow-ups; the built-in HTTP channel's token stays the
opaque, rotating one of ``services``.
"""

from __future__ import annotations

import json
import logging

from django.db import IntegrityError, transaction

from agents.sdk import ChannelSession
from sessions_app.models import ChannelState, Session, SessionMode

logger = logging.getLogger("agent_platform.hooks")

HTTP_CHANNEL = "http"


def channel_token(session: Session) -> str | None:
    """The token that continues ``session`` on its (non-HTTP) channel, or None when it has
    no key or cannot take follow-ups (task mode)."""
    if session.channel == HTTP_CHANNEL or not session.continuation_key:
        return None
    if session.mode == SessionMode.TASK:  # a task session takes no follow-up
        return None
    return f"{session.channel}:{session.continuation_key}"


def channel_session(session: Session, channel: str) -> ChannelSession:
    """The ``channel`` argument of a handler, with the state saved for (session, channel)."""
    row = ChannelState.objects.filter(session_id=session.pk, channel=channel).values_list("state", flat=True).first()
    return ChannelSession(channel, session.pk, state=dict(row or {}), continuation_token=channel_token(session))


def save_channel_session(session: Session, channel: ChannelSession) -> None:
    """Keep what the handler left in ``channel.state`` and apply its re-key. A state that
    is not a JSON object, or a key another session of the channel holds, is logged and
    not applied (the handler's other effects stand)."""
    try:
        state = json.loads(json.dumps(channel.state))
    except (TypeError, ValueError) as error:
        logger.error("channel %r state of session %s is not JSON (%s): not saved", channel.id, session.pk, error)
    else:
        if not isinstance(state, dict):
            logger.error("channel %r state of session %s must be a dict: not saved", channel.id, session.pk)
        else:
            ChannelState.objects.update_or_create(session_id=session.pk, channel=channel.id, defaults={"state": state})
    if channel.new_key and channel.new_key != session.continuation_key:
        try:
            with transaction.atomic():
                Session.objects.filter(pk=session.pk).update(continuation_key=channel.new_key)
            session.continuation_key = channel.new_key
        except IntegrityError:
            logger.error(
                "channel %r: key %r is held by another session; session %s keeps its key",
                channel.id,
                channel.new_key,
                session.pk,
            )
        channel.new_key = None
