"""One ownership rule for every route: naming a session by its id or by its
continuation token, reading it or writing to it, the same callers are let in.

Personas: alice owns the session; bob (same tenant) and mallory (another tenant) do
not; the anonymous local developer in dev mode operates every session."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.services import new_continuation_token
from sessions_app.tests.factories import SessionFactory

# Transactional: a tool call reaches the database from its own thread, as in a server.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def weather():
    from agents.registry import get_agent

    return get_agent("weather")


def alices_session(alice, weather):
    session = SessionFactory(principal=alice, agent=weather)
    session.continuation_token = new_continuation_token(session.pk)
    session.save(update_fields=["continuation_token"])
    return session


def statuses(client: APIClient, session) -> dict[str, int]:
    """The status of each way to reach the session: by id, then by token."""
    tool = "/weather/v1/tools/get_weather"
    by_id = {
        "read by id": client.get(f"/weather/v1/session/{session.pk}").status_code,
        "tool call by id": client.post(
            tool, {"input": {"city": "Lyon"}, "sessionId": session.pk}, format="json"
        ).status_code,
    }
    token = session.continuation_token
    by_token = {
        "tool call by token": client.post(
            tool, {"input": {"city": "Lyon"}, "continuationToken": token}, format="json"
        ).status_code,
        # Last: an accepted follow-up rotates the token.
        "follow-up by token": client.post(
            "/weather/v1/session", {"message": "hi", "continuationToken": token}, format="json"
        ).status_code,
    }
    return by_id | by_token


def test_the_owner_reaches_the_session_by_id_and_by_token(alice, weather, client_for):
    assert statuses(client_for(alice), alices_session(alice, weather)) == {
        "read by id": 200,
        "tool call by id": 200,
        "tool call by token": 200,
        "follow-up by token": 201,
    }


@pytest.mark.parametrize("persona", ["bob", "mallory"])
def test_someone_else_is_refused_alike_by_id_and_by_token(alice, weather, client_for, persona, request):
    other = request.getfixturevalue(persona)
    answers = statuses(client_for(other), alices_session(alice, weather))
    assert answers == dict.fromkeys(answers, 403)


def test_the_local_developer_operates_a_session_by_id_and_by_token_alike(alice, weather, settings):
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}
    developer = APIClient(REMOTE_ADDR="127.0.0.1")
    assert statuses(developer, alices_session(alice, weather)) == {
        "read by id": 200,
        "tool call by id": 200,
        "tool call by token": 200,
        "follow-up by token": 201,
    }


def rotated(session) -> str:
    """A token that was the session's once, before a follow-up rotated it."""
    stale = session.continuation_token
    session.continuation_token = new_continuation_token(session.pk)
    session.save(update_fields=["continuation_token"])
    return stale


@pytest.mark.parametrize("persona", ["bob", "mallory"])
def test_a_stale_token_of_someone_elses_session_is_403_not_409(alice, weather, client_for, persona, request):
    stale = rotated(alices_session(alice, weather))
    client = client_for(request.getfixturevalue(persona))
    follow_up = client.post("/weather/v1/session", {"message": "hi", "continuationToken": stale}, format="json")
    tool_call = client.post(
        "/weather/v1/tools/get_weather", {"input": {"city": "Lyon"}, "continuationToken": stale}, format="json"
    )
    for response in (follow_up, tool_call):
        assert response.status_code == 403
        assert response.json() == {"error": "forbidden", "message": "You do not own this session."}


def test_a_stale_token_of_ones_own_session_is_409(alice, weather, client_for):
    stale = rotated(alices_session(alice, weather))
    response = client_for(alice).post(
        "/weather/v1/session", {"message": "hi", "continuationToken": stale}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["error"] == "stale_continuation_token"
