"""``sync_schedules`` keeps one django-celery-beat PeriodicTask per served schedule: added,
changed, removed and disabled as the agents' trees change (a new tree is a second
discovery: a deployment, a restart), on a UTC crontab, with ``expires``; none in dev mode."""

from __future__ import annotations

import json

import pytest
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from agents.tests.trees import INSTRUCTIONS, write_tree
from sessions_app.triggers.schedules import sync_schedules

MOUNT = 'from agents.sdk import {imports}\n\nextension = mount("../../vendor/crm"{arguments})\n'


def tree(root, files):
    return write_tree(root / "tick", {**INSTRUCTIONS, **files})


def rows() -> dict[str, PeriodicTask]:
    return {task.name: task for task in PeriodicTask.objects.filter(name__startswith="schedule:")}


def serve(settings, folder) -> None:
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": folder}


@pytest.mark.django_db
def test_schedules_become_periodic_tasks_that_follow_the_tree(tmp_path, settings):
    first = tree(
        tmp_path / "v1",
        {
            "agent/schedules/digest.md": "---\ncron: '*/5 * * * *'\n---\nWrite the digest.\n",
            "agent/schedules/nightly.md": "---\ncron: '30 2 * * 1-5'\n---\nSweep.\n",
        },
    ).parent
    serve(settings, first)
    result = sync_schedules()
    assert sorted(result.added) == ["schedule:tick:digest", "schedule:tick:nightly"]
    nightly = rows()["schedule:tick:nightly"]
    assert json.loads(nightly.args) == ["tick", "nightly"]
    assert nightly.task == "sessions_app.tasks.fire_schedule"
    assert nightly.expire_seconds == 60 and nightly.queue.endswith(".schedules") and nightly.enabled
    cron = nightly.crontab
    assert (cron.minute, cron.hour, cron.day_of_month, cron.month_of_year, cron.day_of_week) == (
        "30",
        "2",
        "*",
        "*",
        "1-5",
    )
    assert str(cron.timezone) == "UTC"

    # Nothing changed: nothing is written (beat would reload its schedule for nothing).
    assert sync_schedules() == type(result)()

    # The next tree: digest's cron changed, nightly removed, an extension's schedule
    # added and another of its schedules disabled.
    second = tree(
        tmp_path / "v2",
        {
            "agent/schedules/digest.md": "---\ncron: '*/10 * * * *'\n---\nWrite the digest.\n",
            "agent/extensions/crm.py": MOUNT.format(
                imports="disable_schedule, mount", arguments=', disable=[disable_schedule("noisy")]'
            ),
            "vendor/crm/schedules/renewals.md": "---\ncron: '0 9 * * *'\n---\nList renewals.\n",
            "vendor/crm/schedules/noisy.md": "---\ncron: '* * * * *'\n---\nToo often.\n",
        },
    ).parent
    serve(settings, second)
    result = sync_schedules()
    assert result.changed == ["schedule:tick:digest"]
    assert result.removed == ["schedule:tick:nightly"]
    assert result.added == ["schedule:tick:crm__renewals"]
    assert set(rows()) == {"schedule:tick:digest", "schedule:tick:crm__renewals"}
    assert rows()["schedule:tick:digest"].crontab.minute == "*/10"
    # The crontab only the removed rows used is gone too.
    assert not CrontabSchedule.objects.filter(minute="30", hour="2").exists()


@pytest.mark.django_db
def test_in_dev_mode_no_schedule_has_a_periodic_task(tmp_path, settings):
    folder = tree(tmp_path / "v1", {"agent/schedules/digest.md": "---\ncron: '*/5 * * * *'\n---\nDigest.\n"}).parent
    serve(settings, folder)
    sync_schedules()
    assert set(rows()) == {"schedule:tick:digest"}
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}
    assert sync_schedules().removed == ["schedule:tick:digest"]
    assert rows() == {}


@pytest.mark.django_db
def test_an_agent_with_errors_keeps_no_periodic_task(tmp_path, settings):
    folder = tree(
        tmp_path / "v1",
        {
            "agent/schedules/digest.md": "---\ncron: '*/5 * * * *'\n---\nDigest.\n",
            "agent/tools/broken.py": "raise ValueError('broken at import')\n",
        },
    ).parent
    serve(settings, folder)
    assert sync_schedules().added == []
    assert rows() == {}
