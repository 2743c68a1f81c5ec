"""Running a schedule now, turns on a real worker: ``POST /<slug>/v1/dev/schedules/<id>``
in dev mode (404 with dev mode off, 404 naming the ids for an unknown one) and ``agent
dispatch`` (any mode; ``--wait`` exits 0 once every session completed). A prompt
schedule starts one ``task`` session on the ``schedule`` channel, titled, owned by
the agent's ``schedule`` principal; a handler schedule's ``args.send`` starts what it sends."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agents.registry import get_agent
from sessions_app.models import ScheduleFire, ScheduleFireStatus
from sessions_app.tests.live import LiveClient
from sessions_app.triggers.principals import service_principal

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


@pytest.fixture
def dev(settings):
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}


def owner_client(client_for) -> LiveClient:
    """What the ``schedule`` principal sees: the sessions schedules started."""
    agent = get_agent("clock")
    assert agent is not None
    return LiveClient(client_for(service_principal(agent, "schedule")), "clock")


def test_the_dev_route_runs_a_prompt_schedule_once_per_call(live, dev, alice, client_for):
    live(slug="clock")
    response = client_for(alice).post("/clock/v1/dev/schedules/minutely")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["scheduleId"] == "minutely" and len(body["sessionIds"]) == 1
    owner = owner_client(client_for)
    events = owner.wait_for(body["sessionIds"][0], "turn.completed")
    started = events[0]["data"]
    assert (started["channel"], started["mode"], started["title"]) == ("schedule", "task", "Minute check")
    assert events[2]["data"]["text"] == "Say the minute check is done."
    again = client_for(alice).post("/clock/v1/dev/schedules/minutely").json()
    assert again["sessionIds"] != body["sessionIds"]
    listed = owner.client.get("/clock/v1/sessions").json()["sessions"]
    assert {s["sessionId"] for s in listed} == {*body["sessionIds"], *again["sessionIds"]}


def test_the_dev_route_runs_a_handler_schedule_with_its_args(live, dev, alice, client_for):
    live(slug="clock")
    body = client_for(alice).post("/clock/v1/dev/schedules/fanout").json()
    assert len(body["sessionIds"]) == 2
    owner = owner_client(client_for)
    for session_id, team in zip(body["sessionIds"], ("red", "blue"), strict=True):
        events = owner.wait_for(session_id, "turn.completed")
        assert events[0]["data"]["title"] == f"{team} report"
        assert events[2]["data"]["text"].startswith(f"Report for team {team} at 20")
    # The keys continue the same sessions at the next run.
    again = client_for(alice).post("/clock/v1/dev/schedules/fanout").json()
    assert again["sessionIds"] == body["sessionIds"]
    owner.wait_for(body["sessionIds"][0], "turn.completed", count=2)


def test_an_unknown_schedule_is_404_naming_the_known_ones(live, dev, alice, client_for):
    live(slug="clock")
    response = client_for(alice).post("/clock/v1/dev/schedules/hourly")
    assert response.status_code == 404
    assert response.json()["error"] == "schedule_not_found"
    assert "broken, fanout, minutely" in response.json()["message"]


def test_a_handler_that_raises_is_502_and_the_fire_failed_with_what_it_sent(live, dev, alice, client_for):
    live(slug="clock")
    response = client_for(alice).post("/clock/v1/dev/schedules/broken")
    assert response.status_code == 502
    assert "the report service is down" in response.json()["message"]
    [fire] = ScheduleFire.objects.filter(schedule_id="broken")
    assert fire.status == ScheduleFireStatus.FAILED and len(fire.session_ids) == 1
    logs = client_for(alice).get("/clock/v1/logs").json()["lines"]
    assert any("schedule 'broken' handler failed" in line["message"] for line in logs)


def test_the_dev_route_is_404_with_dev_mode_off(live, alice, client_for):
    live(slug="clock")
    response = client_for(alice).post("/clock/v1/dev/schedules/minutely")
    assert response.status_code == 404 and response.json()["error"] == "not_found"
    assert not ScheduleFire.objects.exists()


def test_agent_dispatch_runs_a_schedule_in_any_mode_and_waits(live, client_for):
    live(slug="clock")
    out = StringIO()
    call_command("agent", "dispatch", "clock", "--schedule", "minutely", "--wait", "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["scheduleId"] == "minutely" and len(printed["sessionIds"]) == 1
    events = owner_client(client_for).events(printed["sessionIds"][0])
    assert "turn.completed" in [event["type"] for event in events]


def test_agent_dispatch_sends_a_message_as_a_task_session(live, client_for):
    live(slug="clock")
    out = StringIO()
    call_command("agent", "dispatch", "clock", "--message", "Count the sheep.", "--wait", "--json", stdout=out)
    [session_id] = json.loads(out.getvalue())["sessionIds"]
    events = owner_client(client_for).events(session_id)
    assert events[0]["data"]["channel"] == "schedule" and events[0]["data"]["mode"] == "task"
    assert events[2]["data"]["text"] == "Count the sheep."


def test_agent_dispatch_of_an_unknown_schedule_exits_1_naming_the_known_ones(live):
    live(slug="clock")
    with pytest.raises(CommandError, match="its schedules: broken, fanout, minutely") as refused:
        call_command("agent", "dispatch", "clock", "--schedule", "hourly")
    assert refused.value.returncode == 1


def test_agent_dispatch_wait_exits_1_when_a_session_did_not_complete(live, client_for):
    live(slug="clock")
    out = StringIO()
    with pytest.raises(CommandError, match="not every session completed") as failed:
        call_command("agent", "dispatch", "clock", "--message", "/fail on purpose", "--wait", "--json", stdout=out)
    assert failed.value.returncode == 1
    [session_id] = json.loads(out.getvalue())["sessionIds"]
    assert "turn.failed" in [event["type"] for event in owner_client(client_for).events(session_id)]
