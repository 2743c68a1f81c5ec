"""Bad requests to the session routes get a clear 4xx and change nothing."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.models import Session, Turn
from sessions_app.tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def weather_session(alice):
    from agents.registry import get_agent

    return SessionFactory(principal=alice, agent=get_agent("weather"))


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({}, "message: This field is required."),
        ({"message": 42}, "message: Not a valid string."),
        ({"message": "hi", "mode": "forever"}, "mode"),
        ({"message": "hi", "dryRun": "yes"}, "dryRun"),
        ({"message": "hi", "workspaceFiles": {"a.txt": 3}}, "workspaceFiles"),
        ({"message": "hi", "workspaceFiles": ["a.txt"]}, "workspaceFiles"),
        ({"message": "hi", "title": "x" * 201}, "title"),
    ],
)
def test_an_invalid_start_is_400_with_the_field_named(alice, client_for, body, problem):
    response = client_for(alice).post("/weather/v1/session", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"
    assert problem in response.json()["message"]
    assert not Session.objects.exists()


@pytest.mark.parametrize("path", ["memory/notes.md", "./memory/x", "a/../memory/x", "../escape.txt", "/etc/passwd"])
def test_a_refused_workspace_path_is_400_and_nothing_is_created(alice, client_for, path):
    response = client_for(alice).post(
        "/weather/v1/session", {"message": "hi", "workspaceFiles": {path: "x"}}, format="json"
    )
    assert response.status_code == 400
    assert not Session.objects.exists()


def test_malformed_json_is_400_and_a_form_body_is_415(alice, client_for):
    client = client_for(alice)
    assert client.post("/weather/v1/session", "{oops", content_type="application/json").status_code == 400
    assert (
        client.post("/weather/v1/session", "message=hi", content_type="application/x-www-form-urlencoded").status_code
        == 415
    )


def test_an_oversized_body_is_413(alice, client_for):
    response = client_for(alice).post("/weather/v1/session", {"message": "x" * 1_100_000}, format="json")
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"message": "hi", "admission": "shove"}, "admission"),
        ({"message": None}, "message"),
        ({"text": "hi"}, "message"),
    ],
)
def test_an_invalid_follow_up_is_400_and_queues_nothing(alice, client_for, weather_session, body, problem):
    response = client_for(alice).post(f"/weather/v1/session/{weather_session.id}", body, format="json")
    assert response.status_code == 400
    assert problem in response.json()["message"]
    assert not Turn.objects.exists()


def test_an_invalid_decision_is_400(alice, client_for, weather_session):
    response = client_for(alice).post(
        f"/weather/v1/session/{weather_session.id}/approvals/call_x", {"decision": "maybe"}, format="json"
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("", {"message": "hi"}),
        ("/stop", {}),
        ("/approvals/call_x", {"decision": "approve"}),
    ],
)
def test_every_write_route_refuses_anyone_but_the_owner(bob, mallory, client_for, weather_session, route, body):
    for stranger in (bob, mallory):
        response = client_for(stranger).post(f"/weather/v1/session/{weather_session.id}{route}", body, format="json")
        assert response.status_code == 403, (stranger, route)
        assert weather_session.title not in response.content.decode()
    assert not Turn.objects.exists()


def test_continuing_another_principals_session_by_token_is_403(bob, client_for, weather_session):
    weather_session.continuation_token = "ct_x.y"
    weather_session.save()
    response = client_for(bob).post(
        "/weather/v1/session", {"message": "hi", "continuationToken": "ct_x.y"}, format="json"
    )
    assert response.status_code in (403, 404)
    assert not Turn.objects.exists()


def test_an_unknown_continuation_token_is_404(alice, client_for):
    response = client_for(alice).post(
        "/weather/v1/session", {"message": "hi", "continuationToken": "ct_nothing.here"}, format="json"
    )
    assert response.status_code == 404


@pytest.mark.parametrize("route", ["/session/ses_unknown", "/session/ses_unknown/stop"])
def test_write_routes_on_an_unknown_session_are_404(alice, client_for, route):
    assert client_for(alice).post(f"/weather/v1{route}", {"message": "hi"}, format="json").status_code == 404


def test_write_routes_need_a_token():
    assert APIClient().post("/weather/v1/session", {"message": "hi"}, format="json").status_code == 401


def test_a_get_on_the_start_route_is_405(alice, client_for):
    assert client_for(alice).get("/weather/v1/session").status_code == 405
