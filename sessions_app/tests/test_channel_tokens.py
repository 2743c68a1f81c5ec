"""Continuation tokens in ``POST /<slug>/v1/tools/:name`` and ``POST /<slug>/v1/session``:
the HTTP API's opaque one or a channel's ``channel:key`` (the ``switch`` test agent has
the ``desk`` channel)."""

from __future__ import annotations

import pytest

from sessions_app.models import SessionMode
from sessions_app.tests.factories import SessionFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def switch(live_agents_dir, settings):
    from agents.registry import get_agent

    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    return get_agent("switch")


def where(client, **body):
    return client.post("/switch/v1/tools/where", {"input": {}, **body}, format="json")


def test_a_channel_token_binds_the_call_to_the_callers_keyed_session(alice, client_for, switch):
    session = SessionFactory(principal=alice, agent=switch, channel="desk", continuation_key="t/1:x")

    response = where(client_for(alice), continuationToken="desk:t/1:x")

    assert response.status_code == 200, response.content
    assert response.json()["result"] == {"channel": {"id": "desk", "continuationToken": "desk:t/1:x"}}
    listed = client_for(alice).get("/switch/v1/sessions").json()["sessions"]
    assert [(s["sessionId"], s["continuationToken"]) for s in listed] == [(session.pk, "desk:t/1:x")]


def test_the_http_channel_is_http_with_its_opaque_token_and_no_session_is_none(alice, client_for, switch):
    session = SessionFactory(principal=alice, agent=switch)
    session.continuation_token = token = f"ct_{session.pk.removeprefix('ses_')}.def"
    session.save()

    by_id = where(client_for(alice), sessionId=session.pk)
    by_token = where(client_for(alice), continuationToken=token)

    http = {"channel": {"id": "http", "continuationToken": token}}
    assert by_id.json()["result"] == http and by_token.json()["result"] == http
    assert where(client_for(alice)).json()["result"] == {"channel": None}


def test_a_channel_session_started_without_a_key_keeps_its_opaque_token(alice, client_for, switch):
    session = SessionFactory(principal=alice, agent=switch, channel="desk")
    session.continuation_token = token = f"ct_{session.pk.removeprefix('ses_')}.ghi"
    session.save()

    response = where(client_for(alice), continuationToken=token)

    assert response.json()["result"] == {"channel": {"id": "desk", "continuationToken": token}}
    listed = client_for(alice).get("/switch/v1/sessions").json()["sessions"]
    assert [s["continuationToken"] for s in listed] == [token]


def test_both_a_session_id_and_a_token_is_400(alice, client_for, switch):
    session = SessionFactory(principal=alice, agent=switch, channel="desk", continuation_key="k")

    response = where(client_for(alice), sessionId=session.pk, continuationToken="desk:k")

    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


@pytest.mark.parametrize("token", ["desk", "nowhere:k", "http:k", "desk:", ":k"])
def test_a_token_with_no_colon_or_no_such_channel_is_400(alice, client_for, switch, token):
    SessionFactory(principal=alice, agent=switch, channel="desk", continuation_key="k")

    response = where(client_for(alice), continuationToken=token)

    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_continuation_token"


def test_a_well_formed_token_of_no_session_of_the_caller_is_404(alice, bob, mallory, client_for, switch):
    SessionFactory(principal=bob, agent=switch, channel="desk", continuation_key="bobs")
    SessionFactory(principal=alice, agent=switch, channel="desk", continuation_key="job", mode=SessionMode.TASK)

    for token in ["desk:nope", "desk:bobs", "desk:job"]:
        response = where(client_for(alice), continuationToken=token)
        assert response.status_code == 404, (token, response.content)
        assert response.json()["error"] == "session_not_found"
    assert where(client_for(mallory), continuationToken="desk:bobs").status_code == 404


def test_a_channel_token_continues_its_session_over_http_too(alice, client_for, switch):
    session = SessionFactory(principal=alice, agent=switch, channel="desk", continuation_key="k")
    client = client_for(alice)

    more = client.post("/switch/v1/session", {"message": "more", "continuationToken": "desk:k"}, format="json")
    wrong = client.post("/switch/v1/session", {"message": "more", "continuationToken": "nowhere:k"}, format="json")

    assert more.status_code == 201, more.content
    assert more.json()["sessionId"] == session.pk
    assert wrong.status_code == 404 and wrong.json()["error"] == "session_not_found"
    assert session.turns.count() == 1
