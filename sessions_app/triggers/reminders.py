"""Reminders (``ctx.host.reminders``): one-shot messages a session leaves for itself.

A reminder is a row in Postgres, never a long ETA on the broker. This module keeps the
records; ``reminder_firing`` fires them: the beat task ``fire_reminders`` calls
``fire_due`` every few seconds: it claims each due row with
``SELECT ... FOR UPDATE SKIP LOCKED`` and, in the same transaction, continues the session
with the message as a ``coalesce`` follow-up (``message.received`` with ``"source":
"reminder"`` and ``"reminderId"``) and marks the row ``fired``. Claim, follow-up and
status commit together, so a crash anywhere before the commit leaves the reminder
pending and its message unsent, and nothing after it can send it twice. A session that
takes no follow-up (a task, or its agent is no longer served) makes it ``dropped``.

In dev mode reminders never fire by themselves: ``fire_reminder_now`` (the dev route and
``manage.py agent dispatch --reminder``) fires one by hand.
"""

from __future__ import annotations

import builtins
import logging
import math
from datetime import datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async as in_thread
from django.utils import timezone

from agent_platform.errors import DomainError
from sessions_app.api.serializers import MAX_MESSAGE_CHARS
from sessions_app.models import Reminder, ReminderStatus

logger = logging.getLogger(__name__)

# How many due reminders one sweep fires at most (the next sweep takes the rest).
FIRE_BATCH = 200
# Pending reminders one session may hold: a tool called in a loop cannot flood the table.
MAX_PENDING_PER_SESSION = 100


class ReminderNotFound(DomainError):
    status, code = 404, "reminder_not_found"


class ReminderNotPending(DomainError):
    status, code = 409, "reminder_not_pending"


class ReminderDropped(DomainError):
    """Fired by hand, but its session takes no follow-up: it is ``dropped`` now."""

    status, code = 409, "reminder_dropped"


# --- creating, listing, cancelling (bound to one session) ---------------------------------------


def fire_time(at: datetime | None, delay: float | timedelta | None, now: datetime) -> datetime:
    """When a reminder asked for with ``at`` or ``delay`` fires.

    Raises:
        ValueError: not exactly one of them; ``at`` naive or not in the future; ``delay``
            not a positive number of seconds or timedelta.
    """
    if (at is None) == (delay is None):
        raise ValueError("give exactly one of at= (an aware datetime) or delay= (seconds or a timedelta)")
    if at is not None:
        if not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None:
            raise ValueError(f"at must be an aware datetime (with a time zone), not {at!r}")
        if at <= now:
            raise ValueError(f"at must be in the future, not {at.isoformat()}")
        return at
    if isinstance(delay, timedelta):
        seconds = delay.total_seconds()
    elif isinstance(delay, int | float) and not isinstance(delay, bool):
        seconds = float(delay)
    else:
        raise ValueError(f"delay must be a number of seconds or a timedelta, not {delay!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"delay must be more than 0 seconds, not {delay!r}")
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(f"delay {delay!r} is too far in the future") from None


def create_reminder(
    session_id: str, message: str, *, at: datetime | None = None, delay: float | timedelta | None = None
) -> dict[str, Any]:
    """A pending reminder for the session; its record.

    Raises:
        ValueError: an empty or over-long message, a bad ``at``/``delay`` (``fire_time``),
            or ``MAX_PENDING_PER_SESSION`` reminders pending already.
    """
    if not isinstance(message, str) or not message.strip():
        raise ValueError("a reminder needs a non-empty message string")
    if len(message) > MAX_MESSAGE_CHARS:
        raise ValueError(f"a reminder's message has at most {MAX_MESSAGE_CHARS} characters, not {len(message)}")
    now = timezone.now()
    fire_at = fire_time(at, delay, now)
    pending = Reminder.objects.filter(session_id=session_id, status=ReminderStatus.PENDING)
    if pending.count() >= MAX_PENDING_PER_SESSION:
        raise ValueError(f"this session has {MAX_PENDING_PER_SESSION} pending reminders already: cancel one first")
    reminder = Reminder.objects.create(session_id=session_id, message=message, fire_at=fire_at, created_at=now)
    return reminder.as_record()


def list_reminders(session_id: str) -> list[dict[str, Any]]:
    """The session's reminders, soonest first (every status)."""
    return [r.as_record() for r in Reminder.objects.filter(session_id=session_id).order_by("fire_at", "created_at")]


def cancel_reminder(session_id: str, reminder_id: str) -> bool:
    """Cancel the session's pending reminder; False when it is not this session's or
    not pending (a conditional update: a sweep that claimed it first wins)."""
    if not isinstance(reminder_id, str):
        return False
    pending = Reminder.objects.filter(pk=reminder_id, session_id=session_id, status=ReminderStatus.PENDING)
    return bool(pending.update(status=ReminderStatus.CANCELLED))


class SessionReminders:
    """``ctx.host.reminders``: the reminders of one session (no other session's can be
    named: every query is filtered by this session)."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id

    async def create(
        self, message: str, *, at: datetime | None = None, delay: float | timedelta | None = None
    ) -> dict[str, Any]:
        """Remind this session of ``message`` at ``at`` or after ``delay``.

        Raises:
            ValueError: not exactly one of ``at``/``delay``, a past or naive ``at``, a
                ``delay`` that is not > 0, or an empty message.
        """
        return await in_thread(create_reminder)(self._session_id, message, at=at, delay=delay)

    async def list(self) -> builtins.list[dict[str, Any]]:
        return await in_thread(list_reminders)(self._session_id)

    async def cancel(self, reminder_id: str) -> bool:
        return await in_thread(cancel_reminder)(self._session_id, reminder_id)
