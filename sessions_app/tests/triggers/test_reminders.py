"""Reminders as authored code and a developer use them: ``ctx.host.reminders`` bound to
one session, the sweep that fires due ones as ``coalesce`` follow-ups (without Celery:
the sweep is a plain function), and dev mode's routes. The end-to-end firing by the
worker and beat is in ``faults/test_reminders.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django.utils import timezone

from agent_platform.tests.factories import issue_token, staff_user_for
from agents.events import EventType
from sessions_app.host import host_for, host_for_agent
from sessions_app.models import Event, Reminder, ReminderStatus, SessionMode, Turn
from sessions_app.tests.factories import AgentFactory, SessionFactory
from sessions_app.triggers.reminder_firing import fire_due
from sessions_app.triggers.reminders import create_reminder

pytestmark = pytest.mark.django_db


def run(coroutine):
    async def wait():
        return await coroutine

    return async_to_sync(wait)()


@pytest.fixture
def session(alice):
    return SessionFactory(principal=alice, agent=AgentFactory(slug="weather"))


def due(session, message: str = "check Lyon again", **fields) -> Reminder:
    reminder = Reminder.objects.create(session=session, message=message, fire_at=timezone.now(), **fields)
    return reminder


def reminder_messages(session) -> list[dict]:
    events = Event.objects.filter(session=session, type=EventType.MESSAGE_RECEIVED).order_by("index")
    return [event.data for event in events if event.data.get("source") == "reminder"]


@pytest.mark.django_db(transaction=True)
def test_a_session_creates_lists_and_cancels_its_reminders(session):
    reminders = host_for(session).reminders
    later = run(reminders.create("later", delay=timedelta(hours=2)))
    soon = run(reminders.create("soon", delay=60))
    at = run(reminders.create("at noon", at=datetime.now(UTC) + timedelta(hours=1)))
    assert soon["id"].startswith("rem_")
    assert {**soon, "id": "-", "at": "-", "createdAt": "-"} == {
        "id": "-",
        "sessionId": session.pk,
        "message": "soon",
        "at": "-",
        "status": "pending",
        "createdAt": "-",
        "firedAt": None,
    }
    assert [r["message"] for r in run(reminders.list())] == ["soon", "at noon", "later"]
    assert run(reminders.cancel(at["id"])) is True
    assert run(reminders.cancel(at["id"])) is False  # not pending any more
    assert [(r["id"], r["status"]) for r in run(reminders.list())] == [
        (soon["id"], "pending"),
        (at["id"], "cancelled"),
        (later["id"], "pending"),
    ]


@pytest.mark.parametrize(
    "message, when",
    [
        ("both", {"at": datetime(2999, 1, 1, tzinfo=UTC), "delay": 5}),
        ("neither", {}),
        ("naive", {"at": datetime(2999, 1, 1)}),
        ("past", {"at": datetime(2000, 1, 1, tzinfo=UTC)}),
        ("zero", {"delay": 0}),
        ("negative", {"delay": timedelta(seconds=-1)}),
        ("not a number", {"delay": "60"}),
        ("a bool", {"delay": True}),
        ("infinite", {"delay": float("inf")}),
        ("", {"delay": 5}),
    ],
)
def test_a_bad_reminder_is_a_value_error_and_records_nothing(session, message, when):
    with pytest.raises(ValueError, match=r"\S"):
        create_reminder(session.pk, message, **when)
    assert not Reminder.objects.exists()


def test_a_session_holds_at_most_a_hundred_pending_reminders(session):
    later = timezone.now() + timedelta(hours=1)
    Reminder.objects.bulk_create(Reminder(session=session, message="m", fire_at=later) for _ in range(100))
    with pytest.raises(ValueError, match="100 pending reminders"):
        create_reminder(session.pk, "one more", delay=60)
    Reminder.objects.filter(session=session).first().delete()
    assert create_reminder(session.pk, "one more", delay=60)["status"] == "pending"


@pytest.mark.django_db(transaction=True)
def test_no_session_can_touch_another_sessions_reminders(alice, bob, mallory, session):
    mine = run(host_for(session).reminders.create("mine", delay=60))
    for other in (SessionFactory(principal=bob, agent=session.agent), SessionFactory(principal=mallory)):
        theirs = host_for(other).reminders
        assert run(theirs.cancel(mine["id"])) is False
        assert run(theirs.list()) == []
    assert Reminder.objects.get(pk=mine["id"]).status == ReminderStatus.PENDING
    # Code that runs outside a session (a channel route, a direct tool call) has none.
    assert host_for_agent(alice.tenant_id, session.agent).reminders is None


def test_a_due_reminder_fires_once_as_a_coalesce_follow_up(session):
    session.continuation_token = "ct_kept"
    session.save()
    reminder = due(session)
    not_yet = Reminder.objects.create(session=session, message="later", fire_at=timezone.now() + timedelta(hours=1))
    assert fire_due() == 1
    assert fire_due() == 0
    reminder.refresh_from_db()
    assert reminder.status == ReminderStatus.FIRED and reminder.fired_at is not None
    assert reminder_messages(session) == [{"text": "check Lyon again", "source": "reminder", "reminderId": reminder.pk}]
    turn = Turn.objects.get(pk=reminder.turn_id)
    assert (turn.message, turn.admission) == ("check Lyon again", "coalesce")
    session.refresh_from_db()
    assert session.continuation_token == "ct_kept"  # the user's token still continues the session
    assert Reminder.objects.get(pk=not_yet.pk).status == ReminderStatus.PENDING


def test_reminders_due_together_join_one_queued_turn(session):
    first, second = due(session, "one"), due(session, "two")
    assert fire_due() == 2
    turns = {r.turn_id for r in Reminder.objects.filter(pk__in=[first.pk, second.pk])}
    assert len(turns) == 1
    assert Turn.objects.get(pk=turns.pop()).message == "one\n\ntwo"


def test_a_session_that_takes_no_follow_up_drops_its_reminder(alice, session):
    task = SessionFactory(principal=alice, agent=session.agent, mode=SessionMode.TASK)
    gone = SessionFactory(principal=alice, agent=AgentFactory(slug="no-such-folder"))
    dropped = [due(task), due(gone)]
    assert fire_due() == 2
    for reminder in dropped:
        reminder.refresh_from_db()
        assert (reminder.status, reminder.turn_id) == (ReminderStatus.DROPPED, None)
        assert reminder_messages(reminder.session) == []


def test_reminders_never_fire_by_themselves_in_dev_mode(session, settings):
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}
    reminder = due(session)
    assert fire_due() == 0
    assert Reminder.objects.get(pk=reminder.pk).status == ReminderStatus.PENDING


# --- dev mode's routes ---------------------------------------------------------------------------


@pytest.fixture
def dev(settings):
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}


def test_the_dev_routes_list_and_fire_the_callers_reminders(dev, alice, bob, session):
    reminder = due(session)
    later = Reminder.objects.create(session=session, message="later", fire_at=timezone.now() + timedelta(hours=1))
    bobs = due(SessionFactory(principal=bob, agent=session.agent), "bob's")
    client = Client(headers={"authorization": f"Bearer {issue_token(alice)}"})
    listed = client.get("/weather/v1/dev/reminders")
    assert listed.status_code == 200
    assert [r["id"] for r in listed.json()["reminders"]] == [reminder.pk, later.pk]

    fired = client.post(f"/weather/v1/dev/reminders/{later.pk}")
    assert fired.status_code == 200, fired.json()
    later.refresh_from_db()
    assert fired.json() == {"reminderId": later.pk, "sessionId": session.pk, "turnId": later.turn_id}
    assert reminder_messages(session) == [{"text": "later", "source": "reminder", "reminderId": later.pk}]

    again = client.post(f"/weather/v1/dev/reminders/{later.pk}")
    assert (again.status_code, again.json()["error"]) == (409, "reminder_not_pending")
    for unknown in ("rem_nope", bobs.pk):
        answer = client.post(f"/weather/v1/dev/reminders/{unknown}")
        assert (answer.status_code, answer.json()["error"]) == (404, "reminder_not_found")
    assert Reminder.objects.get(pk=bobs.pk).status == ReminderStatus.PENDING


def test_firing_a_task_sessions_reminder_by_hand_drops_it(dev, alice):
    task = SessionFactory(principal=alice, agent=AgentFactory(slug="weather"), mode=SessionMode.TASK)
    reminder = due(task)
    client = Client(headers={"authorization": f"Bearer {issue_token(alice)}"})
    answer = client.post(f"/weather/v1/dev/reminders/{reminder.pk}")
    assert (answer.status_code, answer.json()["error"]) == (409, "reminder_dropped")
    assert Reminder.objects.get(pk=reminder.pk).status == ReminderStatus.DROPPED


def test_the_dev_routes_do_not_exist_outside_dev_mode(alice, session):
    reminder = due(session)
    client = Client(headers={"authorization": f"Bearer {issue_token(alice)}"})
    for answer in (
        client.get("/weather/v1/dev/reminders"),
        client.post(f"/weather/v1/dev/reminders/{reminder.pk}"),
        Client().get("/weather/v1/dev/reminders"),
    ):
        assert answer.status_code == 404
    assert Reminder.objects.get(pk=reminder.pk).status == ReminderStatus.PENDING


def test_reminders_are_read_only_in_the_admin_and_tenant_scoped(alice, mallory, session):
    reminder = due(session)
    staff = Client()
    staff.force_login(staff_user_for(alice))
    assert reminder.pk in staff.get("/admin/sessions_app/reminder/").content.decode()
    assert staff.post(f"/admin/sessions_app/reminder/{reminder.pk}/change/", {"status": "cancelled"}).status_code == 403
    assert staff.post(f"/admin/sessions_app/reminder/{reminder.pk}/delete/", {"post": "yes"}).status_code == 403
    stranger = Client()
    stranger.force_login(staff_user_for(mallory))
    assert reminder.pk not in stranger.get("/admin/sessions_app/reminder/").content.decode()
    assert Reminder.objects.get(pk=reminder.pk).status == ReminderStatus.PENDING
