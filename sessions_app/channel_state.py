"""``channel.state`` and the continuation token of a channel's sessions (DESIGN §9.2).

A channel's ``events`` handler gets a ``ChannelSession``: its ``state`` dict is loaded
from ``ChannelState`` before the handler and saved after it (even when it raised: what
it changed before raising is kept, like a ``ctx.send`` it made); a
``set_continuation_token(key)`` re-keys the session on its channel.

A channel session's continuation token is ``f"{channel}:{key}"`` (``slack:T1/C9/1712.0001``),
while the session can take follow-ups; the built-in HTTP channel's token stays the
opaque, rotating one of ``services``. ``ctx.channel`` (``ChannelInfo``) carries it to
tools, hooks and channel handlers; ``session_for_channel_token`` resolves one.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import IntegrityError, transaction

from agent_platform.auth import AuthenticatedPrincipal
from agent_platform.errors import DomainError
from agents.channels import HTTP_CHANNEL as HTTP_CHANNEL
from agents.discovery import AgentSurface
from agents.models import Agent
from agents.sdk import ChannelInfo, ChannelSession
from sessions_app.access import SessionNotFound, visible_sessions
from sessions_app.models import ChannelState, Session, SessionMode

logger = logging.getLogger("agent_platform.hooks")

# The longest channel token, f"{channel}:{key}": both at their longest, and the colon.
MAX_TOKEN_CHARS = (
    (Session._meta.get_field("channel").max_length or 100)
    + 1
    + (Session._meta.get_field("continuation_key").max_length or 300)
)


def channel_token(session: Session) -> str | None:
    """The token that continues ``session`` on its (non-HTTP) channel, or None when it has
    no key or cannot take follow-ups (task mode)."""
    if session.channel == HTTP_CHANNEL or not session.continuation_key:
        return None
    if session.mode == SessionMode.TASK:  # a task session takes no follow-up
        return None
    return f"{session.channel}:{session.continuation_key}"


def listed_token(session: Session) -> str | None:
    """The ``continuationToken`` the session routes show: the channel token of a keyed
    channel session (None in task mode), else the opaque HTTP one (a channel session
    started without a key is continued by that one too)."""
    if session.channel != HTTP_CHANNEL and session.continuation_key:
        return channel_token(session)
    return session.continuation_token


def channel_info(session: Session) -> ChannelInfo | None:
    """``ctx.channel`` for code running in ``session``: None when it takes no follow-up."""
    if session.mode == SessionMode.TASK:
        return None
    return ChannelInfo(session.channel, listed_token(session))


class InvalidContinuationToken(DomainError):
    status, code = 400, "invalid_continuation_token"


def session_for_channel_token(token: str, agent: Agent, surface: AgentSurface, user: AuthenticatedPrincipal) -> Session:
    """The session a channel token (``f"{channel}:{key}"``) continues, among those ``user``
    may use; the caller's own first (in dev mode the developer may see several).

    Raises:
        InvalidContinuationToken: no ``:``, or the part before it is no channel of the agent.
        SessionNotFound: no session of the caller that can take follow-ups has this key.
    """
    channel, colon, key = token.partition(":")
    if not colon or not key:
        raise InvalidContinuationToken(
            "A continuation token is the session's opaque one (ct_...) or a channel's 'channel:key'."
        )
    if channel == HTTP_CHANNEL or channel not in surface.channels:
        names = ", ".join(sorted(surface.channels)) or "none"
        raise InvalidContinuationToken(f"{channel!r} is not a channel of this agent (channels: {names}).")
    keyed = Session.objects.select_related("agent").filter(agent=agent, channel=channel, continuation_key=key)
    candidates = visible_sessions(keyed.exclude(mode=SessionMode.TASK), user)
    session = candidates.filter(principal=user.principal).first()
    if session is None and user.sees_all_sessions:
        session = candidates.first()
    if session is None:
        raise SessionNotFound("No session of yours on this agent has this continuation token.")
    return session


def channel_session(session: Session, channel: str) -> tuple[ChannelSession, dict[str, Any]]:
    """The ``channel`` argument of a handler, with the state saved for (session, channel),
    and that state as read (``save_channel_session`` writes only a change)."""
    row = ChannelState.objects.filter(session_id=session.pk, channel=channel).values_list("state", flat=True).first()
    info = channel_info(session)
    token = info.continuation_token if info is not None else None
    loaded = dict(row or {})
    return ChannelSession(channel, session.pk, state=json.loads(json.dumps(loaded)), continuation_token=token), loaded


def save_channel_session(session: Session, channel: ChannelSession, loaded: dict[str, Any]) -> None:
    """Keep what the handler left in ``channel.state`` (when it changed ``loaded``) and
    apply its re-key. A state that is not a JSON object, or a key another session of the
    channel holds, is logged and not applied (the handler's other effects stand)."""
    try:
        state = json.loads(json.dumps(channel.state))
    except (TypeError, ValueError) as error:
        logger.error("channel %r state of session %s is not JSON (%s): not saved", channel.id, session.pk, error)
    else:
        if not isinstance(state, dict):
            logger.error("channel %r state of session %s must be a dict: not saved", channel.id, session.pk)
        elif state != loaded:
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
