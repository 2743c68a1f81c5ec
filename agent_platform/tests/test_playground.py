"""The playground page and the ways it authenticates: a typed bearer token, the
signed-in staff user's session cookie (CSRF-checked), and the local developer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from agent_platform.asgi import application
from agent_platform.tests.factories import PrincipalFactory
from agents.events import EventType
from agents.registry import get_agent
from agents.tests.deploying import deployed_agent
from sessions_app.eventlog import NewEvent, append_events
from sessions_app.tests.factories import SessionFactory


def page_config(response) -> dict:
    html = response.content.decode()
    start = html.index('id="playground-config"')
    payload = html[html.index(">", start) + 1 : html.index("</script>", start)]
    return json.loads(payload)


@pytest.fixture
def staff_client(alice) -> Client:
    """A browser signed in to the admin as a staff user linked to alice."""
    user = get_user_model().objects.create_user("alice-staff", password="pw", is_staff=True)
    alice.user = user
    alice.save()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def test_a_visitor_without_credentials_gets_the_shell_asking_for_a_token(db):
    response = Client().get("/weather/playground")
    assert response.status_code == 200
    assert page_config(response) == {
        "agent": "weather",
        "auth": "token",
        "actingAs": "",
        "dev": False,
        "routes": {"evals": True, "abs": True},
    }
    assert b'<label for="token-input">API token</label>' in response.content


def test_the_playground_of_an_unknown_agent_is_a_not_found_page(db):
    response = Client().get("/no-such-agent/playground")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert b"No agent is served at /no-such-agent/." in response.content
    assert Client().get("/not%00a-slug/playground").status_code == 400  # NUL: refused before routing


def test_a_private_agent_is_not_found_for_a_visitor_of_another_tenant(db, mallory, alice):

    deployed_agent(alice.tenant, "acme-weather", Path(get_agent("weather").path))
    user = get_user_model().objects.create_user("mallory-staff", password="pw", is_staff=True)
    mallory.user = user
    mallory.save()
    signed_in = Client()
    signed_in.force_login(user)
    assert signed_in.get("/acme-weather/playground").status_code == 404
    # A visitor who has yet to type a token gets the shell; the token decides what it shows.
    assert Client().get("/acme-weather/playground").status_code == 200


def test_signed_in_staff_act_as_their_principal(staff_client):
    config = page_config(staff_client.get("/weather/playground"))
    assert (config["auth"], config["actingAs"]) == ("session", "acme/alice")
    assert staff_client.get("/api/v1/me").json()["principal"] == "alice"


def test_a_cookie_write_without_the_csrf_token_is_refused(staff_client):
    response = staff_client.post("/weather/v1/session", {"message": "hi"}, content_type="application/json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["message"]


def test_a_cookie_write_with_the_csrf_token_opens_a_session_owned_by_the_principal(staff_client, alice):
    staff_client.get("/weather/playground")  # sets the csrftoken cookie, as the page load does
    csrf = staff_client.cookies["csrftoken"].value
    response = staff_client.post(
        "/weather/v1/session", {"message": "hi"}, content_type="application/json", headers={"X-CSRFToken": csrf}
    )
    assert response.status_code == 201, response.content
    listed = staff_client.get("/weather/v1/sessions").json()["sessions"]
    assert [s["sessionId"] for s in listed] == [response.json()["sessionId"]]


def test_a_staff_user_without_a_principal_is_not_let_in(db):
    user = get_user_model().objects.create_user("loose", password="pw", is_staff=True)
    client = Client()
    client.force_login(user)
    assert client.get("/weather/v1/sessions").status_code == 401
    assert page_config(client.get("/weather/playground"))["auth"] == "token"


def test_tool_renderers_are_served_to_callers_of_the_agent(client_for, alice):
    response = client_for(alice).get("/weather/playground/renderers")
    assert response.status_code == 200
    assert 'data-field="args.city"' in response.json()["renderers"]["get_weather"]
    assert Client().get("/weather/playground/renderers").status_code == 401


class TestLocalDeveloper:
    @pytest.fixture(autouse=True)
    def dev_mode(self, settings):
        settings.PLATFORM = {**settings.PLATFORM, "DEV": True}

    def test_the_page_needs_no_token_on_loopback(self, db):
        config = page_config(Client(REMOTE_ADDR="127.0.0.1").get("/weather/playground"))
        assert (config["auth"], config["actingAs"], config["dev"]) == ("dev", "local developer", True)

    def test_the_local_developer_lists_and_opens_every_principals_sessions(self, alice, mallory):
        theirs = SessionFactory(principal=alice, agent=get_agent("weather"))
        others = SessionFactory(principal=mallory, agent=get_agent("weather"))
        local = Client(REMOTE_ADDR="127.0.0.1")
        listed = {s["sessionId"] for s in local.get("/weather/v1/sessions").json()["sessions"]}
        assert {theirs.id, others.id} <= listed
        assert local.get(f"/weather/v1/session/{theirs.id}/events").status_code == 200

    def test_a_remote_caller_still_sees_only_its_own(self, client_for, alice, mallory):
        SessionFactory(principal=alice, agent=get_agent("weather"))
        mine = SessionFactory(principal=mallory, agent=get_agent("weather"))
        listed = client_for(mallory).get("/weather/v1/sessions", REMOTE_ADDR="10.0.0.9").json()["sessions"]
        assert [s["sessionId"] for s in listed] == [mine.id]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_websocket_accepts_the_signed_in_users_session_cookie():
    @database_sync_to_async
    def set_up():
        principal = PrincipalFactory(name="carol")
        user = get_user_model().objects.create_user("carol-staff", password="pw", is_staff=True)
        principal.user = user
        principal.save()
        session = SessionFactory(principal=principal, agent=get_agent("weather"))
        append_events(session.id, [NewEvent(EventType.MESSAGE_APPENDED, {"text": "hello"})])
        client = Client()
        client.force_login(user)
        return session.id, client.cookies["sessionid"].value

    session_id, cookie = await set_up()
    path = f"/ws/weather/session/{session_id}?startIndex=0"
    signed_in = WebsocketCommunicator(application, path, headers=[(b"cookie", f"sessionid={cookie}".encode())])
    assert (await signed_in.connect())[0]
    record = json.loads(await signed_in.receive_from(timeout=5))
    assert (record["type"], record["data"]) == ("message.appended", {"text": "hello"})
    await signed_in.disconnect()

    anonymous = WebsocketCommunicator(application, path)
    await anonymous.connect()
    assert (await anonymous.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4401}


def test_another_tenants_private_agent_has_no_renderers_for_them(client_for, mallory, alice):

    weather = get_agent("weather")
    deployed_agent(alice.tenant, "acme-weather", Path(weather.path))
    assert client_for(mallory).get("/acme-weather/playground/renderers").status_code == 404
    assert "get_weather" in client_for(alice).get("/acme-weather/playground/renderers").json()["renderers"]
