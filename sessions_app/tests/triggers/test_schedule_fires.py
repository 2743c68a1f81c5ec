"""What one fire of a schedule does, called as beat's task calls it (no Celery): the fire
time is the cron's latest at or before now; a second message for the same fire time (a
second beat) starts nothing; a fire that arrives later than the grace (beat was down
across it) is recorded ``missed``, logged on the agent's log, and starts nothing."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_platform.models import Tenant
from sessions_app.models import LogLine, ScheduleFire, ScheduleFireStatus, Session
from sessions_app.triggers.schedules import fire_schedule, fire_time

CLOCK = Path(__file__).resolve().parents[1] / "agent_trees" / "clock"


@pytest.fixture
def clock(tmp_path, settings):
    shutil.copytree(CLOCK, tmp_path / "clock", ignore=shutil.ignore_patterns("__pycache__"))
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    return "clock"


def test_the_fire_time_is_the_crons_latest_at_or_before_now():
    at = datetime(2026, 12, 1, 12, 1, tzinfo=UTC)
    assert fire_time("* * * * *", at) == at
    assert fire_time("* * * * *", at.replace(second=59)) == at
    assert fire_time("0 3 * * *", at) == datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


@pytest.mark.django_db
def test_a_second_beats_message_for_the_same_fire_time_starts_nothing(clock):
    at = datetime(2026, 12, 1, 12, 1, 2, tzinfo=UTC)
    first = fire_schedule(clock, "minutely", now=at)
    assert first is not None and first.status == ScheduleFireStatus.DONE
    assert fire_schedule(clock, "minutely", now=at.replace(second=4)) is None
    [session] = Session.objects.filter(agent__slug=clock)
    assert first.session_ids == [session.pk]
    assert (session.channel, session.mode, session.title, session.principal.name) == (
        "schedule",
        "task",
        "Minute check",
        "schedule",
    )
    assert session.continuation_key == ""
    # The next minute is another fire.
    assert fire_schedule(clock, "minutely", now=at.replace(minute=2)) is not None
    assert Session.objects.filter(agent__slug=clock).count() == 2


@pytest.mark.django_db
def test_a_beat_that_sends_a_moment_early_names_the_same_fire_time_as_one_on_time(clock):
    early = fire_schedule(clock, "minutely", now=datetime(2026, 12, 1, 12, 0, 59, 400_000, tzinfo=UTC))
    on_time = fire_schedule(clock, "minutely", now=datetime(2026, 12, 1, 12, 1, 0, 200_000, tzinfo=UTC))
    assert early is not None and early.scheduled_for == datetime(2026, 12, 1, 12, 1, tzinfo=UTC)
    assert on_time is None
    assert Session.objects.filter(agent__slug=clock).count() == 1


@pytest.mark.django_db
def test_a_fire_later_than_the_grace_is_skipped_and_logged_never_run_late(clock, settings):
    settings.PLATFORM = {**settings.PLATFORM, "SCHEDULE_GRACE_SECONDS": 5}
    fire = fire_schedule(clock, "minutely", now=datetime(2026, 12, 1, 12, 1, 9, tzinfo=UTC))
    assert fire is not None and fire.status == ScheduleFireStatus.MISSED
    assert not Session.objects.exists()
    [line] = LogLine.objects.filter(agent_slug=clock, message__contains="missed while beat was down")
    assert "2026-12-01T12:01:00+00:00" in line.message and line.level == "WARNING"
    # The same fire time, sent again, is still only the one row.
    assert fire_schedule(clock, "minutely", now=datetime(2026, 12, 1, 12, 1, 10, tzinfo=UTC)) is None
    assert ScheduleFire.objects.count() == 1


@pytest.mark.django_db
def test_a_fire_in_dev_mode_or_of_a_schedule_that_is_gone_does_nothing(clock, settings):
    at = datetime(2026, 12, 1, 12, 1, tzinfo=UTC)
    assert fire_schedule(clock, "vanished", now=at) is None
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}
    assert fire_schedule(clock, "minutely", now=at) is None
    assert not ScheduleFire.objects.exists() and not Session.objects.exists()


@pytest.mark.django_db
def test_a_fire_refused_by_the_tenants_budget_is_recorded_failed_and_starts_nothing(clock):
    # A shared agent's schedules start their sessions in the SHARED_AGENTS_TENANT ("local").
    Tenant.objects.get_or_create(slug="local", defaults={"monthly_budget_usd": 0})
    Tenant.objects.filter(slug="local").update(monthly_budget_usd=0)
    fire = fire_schedule(clock, "minutely", now=datetime(2026, 12, 1, 12, 1, 2, tzinfo=UTC))
    assert fire is not None and fire.status == ScheduleFireStatus.FAILED
    assert fire.error.startswith("budget_exhausted")
    assert not Session.objects.filter(agent__slug=clock).exists()
