"""Firing reminders (``sessions_app.triggers.reminders`` keeps their records): due rows are
claimed with ``SELECT ... FOR UPDATE SKIP LOCKED`` and, in the same transaction, sent to
their session as a ``coalesce`` follow-up and marked ``fired`` (or ``dropped``)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from agent_platform.conf import platform_settings
from agent_platform.request_ids import new_request_id, request_id
from agents.registry import served_row
from sessions_app import services
from sessions_app.models import Admission, Reminder, ReminderStatus, Session, SessionMode, Turn
from sessions_app.quotas import QuotaError
from sessions_app.triggers.reminders import FIRE_BATCH, ReminderDropped, ReminderNotFound, ReminderNotPending

logger = logging.getLogger("sessions_app.triggers.reminders")


def fire_due(now: datetime | None = None) -> int:
    """Fire every reminder due by ``now`` (beat, every few seconds); how many it claimed.
    Nothing in dev mode: reminders fire there only by hand."""
    if platform_settings.DEV:
        return 0
    now = now or timezone.now()
    claimed = 0
    while claimed < FIRE_BATCH:
        with request_id(new_request_id()):  # each reminder's follow-up turn is a request of its own
            if not _fire_next_due(now):
                break
        claimed += 1
    return claimed


def _fire_next_due(now: datetime) -> bool:
    """Claim one due reminder (skipping those another sweep holds) and deliver it, in one
    transaction; False when none is left."""
    with transaction.atomic():
        due = Reminder.objects.select_for_update(skip_locked=True).filter(
            status=ReminderStatus.PENDING, fire_at__lte=now
        )
        reminder = due.order_by("fire_at").first()
        if reminder is None:
            return False
        _deliver(reminder)
    return True


def fire_reminder_now(slug: str, reminder_id: str) -> dict[str, Any]:
    """Fire a pending reminder of agent ``slug`` now, in any mode (the dev route, ``agent
    dispatch --reminder``): ``{"reminderId", "sessionId", "turnId"}``.

    Raises:
        ReminderNotFound: no reminder with this id on this agent.
        ReminderNotPending: it fired, was cancelled or dropped already.
        ReminderDropped: its session takes no follow-up (it is ``dropped`` now).
    """
    with transaction.atomic():
        reminder = Reminder.objects.select_for_update().filter(pk=reminder_id, session__agent__slug=slug).first()
        if reminder is None:
            raise ReminderNotFound(f"No reminder {reminder_id!r} on agent {slug!r}.")
        if reminder.status != ReminderStatus.PENDING:
            raise ReminderNotPending(f"Reminder {reminder_id!r} is {reminder.status}, not pending.")
        turn = _deliver(reminder)
    if turn is None:
        raise ReminderDropped(f"Reminder {reminder_id!r} was dropped: its session takes no follow-up.")
    return {"reminderId": reminder.pk, "sessionId": reminder.session_id, "turnId": turn.pk}


def _deliver(reminder: Reminder) -> Turn | None:
    """Send the claimed (row-locked) reminder to its session as a ``coalesce`` follow-up
    and record the outcome; the turn it joined, or None when it was dropped.

    The session's row is locked first, so the continuation token read here is current:
    a reminder keeps it (nobody reads the answer that would carry a new one)."""
    session = Session.objects.select_for_update(of=("self",)).select_related("agent").get(pk=reminder.session_id)
    turn: Turn | None = None
    if session.mode != SessionMode.TASK and served_row(session.agent.slug, session.agent) is not None:
        try:
            turn = services.continue_session(
                session,
                message=reminder.message,
                admission=Admission.COALESCE,
                extra={"source": "reminder", "reminderId": reminder.pk},
                rotate_token=False,
            )
        except (services.SessionError, QuotaError) as refused:  # a refusal is final: retrying would block the sweep
            logger.info("reminder %s refused by session %s: %s", reminder.pk, session.pk, refused)
    if turn is None:
        logger.info("reminder %s dropped: session %s takes no follow-up", reminder.pk, session.pk)
    reminder.status = ReminderStatus.FIRED if turn is not None else ReminderStatus.DROPPED
    reminder.fired_at, reminder.turn = timezone.now(), turn
    reminder.save(update_fields=["status", "fired_at", "turn"])
    return turn
