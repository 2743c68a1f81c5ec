"""Row 16: cron and beat faults, with real beat processes on django-celery-beat's
database scheduler and the stack's worker.

One test, in two phases, because each phase waits for the clock (a ``* * * * *``
schedule fires once a minute) and the second starts where the first ends:

1. two beat processes over one fire time → one session (each beat sends the fire; the
   second finds the fire claimed and starts nothing);
2. both beats stopped across the next fire time and one started again after it
   (later than the stack's 10 s grace) → that fire is skipped and logged, never run late.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agent_platform.tests.factories import issue_token
from agents.registry import get_agent
from sessions_app.models import ScheduleFire, ScheduleFireStatus
from sessions_app.tests.faults.stack import PYTHON, Stack, wait_until
from sessions_app.triggers.principals import service_principal
from sessions_app.triggers.schedules import sync_schedules

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
GRACE_SECONDS = 10  # the stack's PLATFORM_SCHEDULE_GRACE_SECONDS


def start_beat(stack: Stack, name: str):
    """A beat process as operators run it: the database scheduler (the settings' default)."""
    argv = [PYTHON, "-m", "celery", "-A", "agent_platform", "beat", "--loglevel=INFO"]
    argv += ["--pidfile", str(stack.work / f"{name}-{uuid.uuid4().hex[:6]}.pid")]
    return stack.processes.start(name, argv, stack.env)


def next_minute(after: datetime) -> datetime:
    return (after + timedelta(minutes=1)).replace(second=0, microsecond=0)


def sleep_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - timezone.now()).total_seconds()))


def minute_sessions(client) -> list[dict]:
    status, body = client.call("GET", "/clock/v1/sessions")
    assert status == 200, body
    return [s for s in body["sessions"] if s["title"] == "Minute check"]


def log_lines(client, text: str) -> list[str]:
    status, body = client.call("GET", "/clock/v1/logs?limit=1000")
    assert status == 200, body
    return [line["message"] for line in body["lines"] if text in line["message"]]


def test_two_beats_fire_once_per_minute_and_a_fire_missed_while_beat_was_down_is_skipped(fault, settings, alice):
    settings.PLATFORM = {**settings.PLATFORM, "SCHEDULE_GRACE_SECONDS": GRACE_SECONDS}
    sync_schedules()  # the stack's beat syncs too, every 30 s; this one is now
    assert PeriodicTask.objects.filter(name="schedule:clock:minutely").exists()
    agent = get_agent("clock")
    assert agent is not None
    owner = fault.client(issue_token(service_principal(agent, "schedule")), slug="clock")
    developer = fault.client(issue_token(alice), slug="clock")
    # Both beats start mid-minute: 20 s or more before the first fire time counted here,
    # so each has read the schedule by then, and later than the grace after the fire time
    # before it (a starting beat sends that one at once: it is missed, not run).
    now = timezone.now()
    if now.second < 15:
        sleep_until(now.replace(second=15, microsecond=0))
    elif now.second > 40:
        sleep_until(next_minute(now) + timedelta(seconds=15))
    first = next_minute(timezone.now())
    beats = [start_beat(fault, "beat-a"), start_beat(fault, "beat-b")]
    try:
        # Phase 1: the fire time makes one session, though both beats send it.
        sleep_until(first + timedelta(seconds=2))
        wait_until(lambda: len(minute_sessions(owner)) >= 1, what="a session for the fire time")
        wait_until(lambda: len(log_lines(developer, "already fired (another beat)")) >= 1, what="both beats' sends")
        fires = ScheduleFire.objects.filter(schedule_id="minutely", manual=False, scheduled_for__gte=first)
        assert [(f.scheduled_for, f.status) for f in fires] == [(first, ScheduleFireStatus.DONE)]
        (session,) = minute_sessions(owner)
        owner.wait_for(session["sessionId"], "turn.completed")

        # Phase 2: no beat across the next fire time; one beat back after the grace.
        for beat in beats:
            fault.processes.stop(beat)
        beats = []
        second = first + timedelta(minutes=1)
        sleep_until(second + timedelta(seconds=GRACE_SECONDS + 5))
        beats = [start_beat(fault, "beat-c")]
        missed = wait_until(
            lambda: log_lines(developer, f"{second.astimezone(UTC).isoformat()} skipped: missed while beat was down"),
            what="the missed fire's log line",
        )
        assert len(missed) == 1
        assert ScheduleFire.objects.get(scheduled_for=second).status == ScheduleFireStatus.MISSED
        assert len(minute_sessions(owner)) == 1
    finally:
        for beat in beats:
            fault.processes.stop(beat)
