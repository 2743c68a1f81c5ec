"""Reminders fired by the worker, on beat's sweep, through HTTP (DESIGN §9.3 Reminders).

A tool of a session leaves a reminder (the weather example's ``remind_me``); when it is
due, the message comes back to that session once, as a ``coalesce`` follow-up with
``"source": "reminder"``. It lives in Postgres, not on the broker: a worker that was down
when it came due fires it once it is back, and only once.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Reminder, ReminderStatus
from sessions_app.tests.faults.stack import wait_until

pytestmark = [pytest.mark.fault, pytest.mark.slow]


def remind(message: str, seconds: int) -> str:
    return f"/call remind_me {json.dumps({'message': message, 'delay_seconds': seconds})}"


def reminded(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "message.received" and e["data"].get("source") == "reminder"]


def test_a_tools_reminder_comes_back_once_as_a_follow_up(fault, token):
    client = fault.client(token, "weather")
    chat = client.start(remind("check Lyon again", 1))
    task = client.start(remind("never delivered", 1), mode="task")
    end = client.wait_turn_ended(chat["sessionId"], chat["turnId"])
    record = json.loads(end["data"]["result"].removeprefix("done: remind_me -> "))
    assert (record["sessionId"], record["status"], record["message"]) == (
        chat["sessionId"],
        "pending",
        "check Lyon again",
    )

    events = client.wait_for(chat["sessionId"], "message.received", count=2)
    [follow_up] = reminded(events)
    assert follow_up["data"] == {"text": "check Lyon again", "source": "reminder", "reminderId": record["id"]}
    answer = client.wait_turn_ended(chat["sessionId"], follow_up["turnId"])
    assert answer["data"]["result"] == "echo: check Lyon again"
    # The reminder left the caller's continuation token as it was.
    status, body = client.call(
        "POST", "/weather/v1/session", {"message": "thanks", "continuationToken": chat["continuationToken"]}
    )
    assert status == 201, body

    # A task session takes no follow-up: its reminder is dropped, its log untouched.
    wait_until(
        lambda: Reminder.objects.filter(session_id=task["sessionId"], status=ReminderStatus.DROPPED).exists(),
        what="the task session's reminder to be dropped",
    )
    assert reminded(client.events(task["sessionId"])) == []
    assert len(reminded(client.events(chat["sessionId"]))) == 1


def test_a_reminder_due_while_the_worker_is_down_fires_once_when_it_is_back(fault, token):
    client = fault.client(token, "weather")
    started = client.start(remind("after the restart", 1))
    session = started["sessionId"]
    client.wait_turn_ended(session, started["turnId"])
    fault.kill_worker()
    reminder = Reminder.objects.get(session_id=session)
    # Beat sweeps every 5 s: let one sweep pass after it is due, with nobody to run it.
    while timezone.now() < reminder.fire_at + timedelta(seconds=6):
        time.sleep(0.2)
    reminder.refresh_from_db()
    assert reminder.status == ReminderStatus.PENDING
    fault.restart_worker()

    [follow_up] = reminded(client.wait_for(session, "message.received", count=2))
    assert follow_up["data"]["reminderId"] == reminder.pk
    client.wait_turn_ended(session, follow_up["turnId"])
    reminder.refresh_from_db()
    assert (reminder.status, reminder.turn_id) == (ReminderStatus.FIRED, follow_up["turnId"])
    assert len(reminded(client.events(session))) == 1
