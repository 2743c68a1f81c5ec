"""Reading sessions over HTTP: owners see theirs, nobody else sees anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.events import EventType
from agents.tests.deploying import deployed_agent
from sessions_app.eventlog import append_event
from sessions_app.tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def weather():
    """The shared example agent (its folder is in examples/)."""
    from agents.registry import get_agent

    return get_agent("weather")


@pytest.fixture
def alice_session(alice, weather):
    session = SessionFactory(principal=alice, agent=weather, title="alice's secret plans")
    append_event(session.id, EventType.SESSION_STARTED)
    append_event(session.id, EventType.MESSAGE_RECEIVED, {"text": "forecast for Lyon?"})
    return session


def test_the_owner_reads_the_session_state(alice, alice_session, client_for):
    response = client_for(alice).get(f"/weather/v1/session/{alice_session.id}")
    assert response.status_code == 200
    body = response.json()
    assert body["sessionId"] == alice_session.id
    assert body["agent"] == "weather"
    assert body["mode"] == "chat" and body["purpose"] == "live"
    assert body["eventCount"] == 2
    assert body["firstMessage"] == "forecast for Lyon?"


def test_lists_show_each_sessions_first_message_cut_short(alice, alice_session, weather, client_for):
    long = SessionFactory(principal=alice, agent=weather)
    append_event(long.id, EventType.SESSION_STARTED)
    append_event(long.id, EventType.MESSAGE_RECEIVED, {"text": "x" * 300})
    append_event(long.id, EventType.MESSAGE_RECEIVED, {"text": "the second"})
    quiet = SessionFactory(principal=alice, agent=weather)
    listed = {
        s["sessionId"]: s["firstMessage"] for s in client_for(alice).get("/weather/v1/sessions").json()["sessions"]
    }
    assert listed == {alice_session.id: "forecast for Lyon?", long.id: "x" * 200, quiet.id: None}


def test_the_owner_dumps_the_events_in_order(alice, alice_session, client_for):
    response = client_for(alice).get(f"/weather/v1/session/{alice_session.id}/events")
    assert response.status_code == 200
    events = response.json()["events"]
    assert [(e["index"], e["type"]) for e in events] == [(0, "session.started"), (1, "message.received")]
    assert events[1]["data"] == {"text": "forecast for Lyon?"}
    tail = client_for(alice).get(f"/weather/v1/session/{alice_session.id}/events?startIndex=1").json()["events"]
    assert [e["index"] for e in tail] == [1]
    # A page at a time: nextStartIndex says where the next one starts, null at the end.
    assert response.json()["nextStartIndex"] is None
    page = client_for(alice).get(f"/weather/v1/session/{alice_session.id}/events?limit=1").json()
    assert ([e["index"] for e in page["events"]], page["nextStartIndex"]) == ([0], 1)


@pytest.mark.parametrize("start", ["-1", "abc", "1.5"])
def test_a_bad_start_index_is_400(alice, alice_session, client_for, start):
    response = client_for(alice).get(f"/weather/v1/session/{alice_session.id}/events?startIndex={start}")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


@pytest.mark.parametrize("route", ["", "/events"])
def test_another_principal_of_the_same_tenant_gets_403(bob, alice_session, client_for, route):
    response = client_for(bob).get(f"/weather/v1/session/{alice_session.id}{route}")
    assert response.status_code == 403
    assert "secret plans" not in response.content.decode()


@pytest.mark.parametrize("route", ["", "/events"])
def test_another_tenant_gets_403_and_learns_nothing(mallory, alice_session, client_for, route):
    response = client_for(mallory).get(f"/weather/v1/session/{alice_session.id}{route}")
    assert response.status_code == 403
    assert response.json() == {"error": "forbidden", "message": "You do not own this session."}


def test_lists_show_only_the_callers_sessions(alice, mallory, alice_session, weather, client_for):
    SessionFactory(principal=mallory, agent=weather, title="mallory's")
    mine = client_for(alice).get("/weather/v1/sessions").json()["sessions"]
    theirs = client_for(mallory).get("/weather/v1/sessions").json()["sessions"]
    assert [s["sessionId"] for s in mine] == [alice_session.id]
    assert [s["title"] for s in theirs] == ["mallory's"]
    assert alice_session.id not in str(theirs)


def test_an_unknown_session_is_404(alice, client_for, weather):
    response = client_for(alice).get("/weather/v1/session/ses_unknown")
    assert response.status_code == 404
    assert response.json()["error"] == "session_not_found"


def test_a_session_is_only_found_under_its_own_agent(alice, alice_session, client_for):
    assert client_for(alice).get(f"/triage/v1/session/{alice_session.id}").status_code == 404


def test_another_tenants_private_agent_is_404_on_every_route(alice, mallory, client_for):
    private = deployed_agent(
        mallory.tenant, "umbrella-bot", Path(__file__).resolve().parents[2] / "examples" / "weather"
    )
    session = SessionFactory(principal=mallory, agent=private)
    client = client_for(alice)
    for route in ["/health", "/sessions", f"/session/{session.id}", f"/session/{session.id}/events"]:
        response = client.get(f"/umbrella-bot/v1{route}")
        assert response.status_code == 404, route
        assert response.json()["error"] == "agent_not_found"
    assert client_for(mallory).get(f"/umbrella-bot/v1/session/{session.id}").status_code == 200


def test_session_routes_need_a_token(alice_session):
    from rest_framework.test import APIClient

    for route in ["/weather/v1/sessions", f"/weather/v1/session/{alice_session.id}"]:
        assert APIClient().get(route).status_code == 401


def test_writing_to_a_read_only_route_is_405(alice, alice_session, client_for):
    response = client_for(alice).delete(f"/weather/v1/session/{alice_session.id}/events")
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
