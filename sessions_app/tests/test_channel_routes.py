"""``/<slug>/v1/channels/<channel><path>``: authored channel routes, called as the web
playground or a widget would (the lab agent's ``ops`` and ``guarded`` channels, and the
support example's ``web`` channel)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.models import Session

pytestmark = pytest.mark.django_db


@pytest.fixture
def agents(live_agents_dir, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}


def post(client, url, body=None, **extra):
    return client.post(url, body, format="json", **extra)


def events(client, session_id, slug="lab"):
    return client.get(f"/{slug}/v1/session/{session_id}/events").json()["events"]


# --- finding the route -----------------------------------------------------------------------


def test_every_route_listed_by_info_is_served_at_its_url(alice, client_for, agents):
    client = client_for(alice)
    [ops] = [c for c in client.get("/lab/v1/info").json()["channels"] if c["name"] == "ops"]
    ping = next(r for r in ops["routes"] if r["method"] == "GET" and r["path"] == "/ping")
    assert ping["url"] == "/lab/v1/channels/ops/ping"

    response = client.get(ping["url"] + "?city=Lyon", HTTP_X_WIDGET="7")

    assert response.status_code == 200 and response["Allow"] == "GET, DELETE"
    body = response.json()
    assert body["agent"] == "lab" and body["channel"] == "ops" and body["query"] == {"city": "Lyon"}
    # Authored code sees the request's headers, but never the platform's credential.
    assert "x-widget" in body["headers"] and "authorization" not in body["headers"]


def test_an_unknown_channel_or_path_is_404_with_the_available_routes(alice, client_for, agents):
    client = client_for(alice)

    channel = post(client, "/lab/v1/channels/nope/send", {"text": "hi"})
    assert channel.status_code == 404
    assert channel.json()["error"] == "channel_not_found"
    assert "POST /lab/v1/channels/ops/send" in channel.json()["message"]
    assert "POST /lab/v1/channels/guarded/hello" in channel.json()["message"]

    for path in ["/sen", "/send/", "/send/more", ""]:
        route = post(client, f"/lab/v1/channels/ops{path}", {"text": "hi"})
        assert route.status_code == 404, path
        assert route.json()["error"] == "route_not_found"
        assert "POST /lab/v1/channels/ops/send" in route.json()["message"]
        assert {"method": "GET", "path": "/ping", "url": "/lab/v1/channels/ops/ping"} in route.json()["routes"]
        assert "Allow" not in route
    assert not Session.objects.exists()


def test_a_known_path_with_another_method_is_405(alice, client_for, agents):
    client = client_for(alice)
    for method in ["put", "patch", "head", "options"]:
        response = getattr(client, method)("/lab/v1/channels/ops/ping")
        assert response.status_code == 405, method
        assert response["Allow"] == "GET, DELETE"
    assert client.put("/lab/v1/channels/ops/ping").json()["error"] == "method_not_allowed"
    assert client.get("/lab/v1/channels/ops/send").status_code == 405


def test_the_platforms_auth_applies(alice, mallory, client_for, agents, settings):
    assert APIClient().get("/lab/v1/channels/ops/ping").status_code == 401
    # Dev mode admits anonymous loopback calls, as on every agent route.
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}
    assert APIClient().get("/lab/v1/channels/ops/ping").status_code == 200


def test_a_channels_own_auth_is_required_too(alice, client_for, agents):
    client = client_for(alice)
    url = "/lab/v1/channels/guarded/hello"

    assert post(client, url, {"say": "ok"}).status_code == 401
    refused = post(client, url, {"say": "no"}, HTTP_X_OPS_SECRET="s3cret")
    assert refused.status_code == 401
    assert refused.json() == {"error": "channel_unauthorized", "message": "Channel 'guarded' refused this request."}
    assert post(client, url, {"say": "ok"}, HTTP_X_OPS_SECRET="s3cret").json() == {"hello": "guarded"}
    # Both: the channel's secret alone is not the platform's credential.
    assert post(APIClient(), url, {"say": "ok"}, HTTP_X_OPS_SECRET="s3cret").status_code == 401


# --- the body --------------------------------------------------------------------------------


def test_a_body_that_does_not_fit_the_model_is_400_with_pydantics_errors(alice, client_for, agents):
    client = client_for(alice)

    response = post(client, "/lab/v1/channels/ops/send", {"text": "", "mode": "forever"})

    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_body"
    assert "text: String should have at least 1 character" in body["message"]
    assert [(d["loc"], d["type"]) for d in body["details"]] == [
        (["text"], "string_too_short"),
        (["mode"], "literal_error"),
    ]
    assert post(client, "/lab/v1/channels/ops/send", ["text"]).json()["details"][0]["type"] == "model_type"
    assert post(client, "/lab/v1/channels/ops/send").json()["details"][0] == {
        "type": "missing",
        "loc": ["text"],
        "msg": "Field required",
        "input": {},
    }
    assert not Session.objects.exists()


def test_a_body_that_is_not_json_is_415_or_400_and_an_oversize_one_413(alice, client_for, agents, settings):
    client = client_for(alice)
    url = "/lab/v1/channels/ops/send"
    form = client.post(url, {"text": "hi"})  # multipart
    assert form.status_code == 415 and form.json()["error"] == "unsupported_media_type"
    broken = client.post(url, "{nope", content_type="application/json")
    assert broken.status_code == 400 and broken.json()["error"] == "parse_error"
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    big = post(client, url, {"text": "x" * 4096})
    assert big.status_code == 413 and big.json()["error"] == "body_too_large"
    assert not Session.objects.exists()


# --- what the handler answers ----------------------------------------------------------------


def test_none_is_204_and_a_route_without_a_body_ignores_one(alice, client_for, agents):
    client = client_for(alice)
    quiet = client.post("/lab/v1/channels/ops/quiet", "not json at all", content_type="text/plain")
    assert quiet.status_code == 204 and quiet.content == b""
    assert client.delete("/lab/v1/channels/ops/ping").status_code == 204


def test_a_handler_that_raises_is_502_logged_and_changes_nothing(alice, mallory, client_for, agents):
    client = client_for(alice)

    response = client.post("/lab/v1/channels/ops/boom")

    assert response.status_code == 502
    assert response.json() == {"error": "channel_handler_failed", "message": "RuntimeError: the ticket system is down"}
    assert b"Traceback" not in response.content
    assert not Session.objects.exists()
    [line] = [
        line
        for line in client.get("/lab/v1/logs").json()["lines"]
        if line["logger"] == "sessions_app.authored_channels"
    ]
    assert line["level"] == "ERROR"
    assert "channel 'ops' route POST /boom failed: RuntimeError: the ticket system is down" in line["message"]
    assert "Traceback" in line["message"]  # the log keeps it, the answer does not
    # Another tenant on the same shared agent does not see alice's failure.
    assert client_for(mallory).get("/lab/v1/logs").json()["lines"] == []


def test_a_value_that_is_not_json_is_502(alice, client_for, agents):
    response = client_for(alice).get("/lab/v1/channels/ops/not-json")
    assert response.status_code == 502
    assert response.json()["message"].startswith("PydanticSerializationError: Unable to serialize unknown type")


@pytest.mark.django_db(transaction=True)
def test_handlers_reach_the_host_apis(alice, client_for, agents):
    response = client_for(alice).post("/lab/v1/channels/ops/remember")
    assert response.status_code == 200 and response.json() == {"kv": "seen"}


# --- ctx.send --------------------------------------------------------------------------------


def test_send_starts_a_session_on_the_channel(alice, client_for, agents):
    client = client_for(alice)

    response = post(client, "/lab/v1/channels/ops/send", {"text": "the printer is on fire"})

    assert response.status_code == 201
    sent = response.json()
    assert set(sent) == {"sessionId", "continuationToken", "turnId"}
    log = events(client, sent["sessionId"])
    started = next(e for e in log if e["type"] == "session.started")
    assert started["data"]["channel"] == "ops" and started["data"]["title"] == "from ops"
    received = next(e for e in log if e["type"] == "message.received")
    assert received["data"]["text"] == "the printer is on fire" and received["turnId"] == sent["turnId"]
    state = client.get(f"/lab/v1/session/{sent['sessionId']}").json()
    assert state["channel"] == "ops" and state["continuationToken"] == sent["continuationToken"]
    # Without a key, every call is a new conversation.
    again = post(client, "/lab/v1/channels/ops/send", {"text": "still burning"})
    assert again.status_code == 201 and again.json()["sessionId"] != sent["sessionId"]


def test_the_same_key_continues_the_same_session(alice, client_for, agents):
    client = client_for(alice)
    url = "/lab/v1/channels/ops/send"

    first = post(client, url, {"text": "PR opened", "key": "pr:acme/shop#7"})
    second = post(client, url, {"text": "PR updated", "key": "pr:acme/shop#7"})

    assert first.status_code == 201 and second.status_code == 202
    assert second.json()["sessionId"] == first.json()["sessionId"]
    # A keyed channel session's token is "<channel>:<key>": it does not rotate.
    assert first.json()["continuationToken"] == second.json()["continuationToken"] == "ops:pr:acme/shop#7"
    assert second.json()["turnId"] != first.json()["turnId"]
    texts = [e["data"]["text"] for e in events(client, first.json()["sessionId"]) if e["type"] == "message.received"]
    assert texts == ["PR opened", "PR updated"]
    # The HTTP API continues it with that token too.
    more = post(client, "/lab/v1/session", {"message": "x", "continuationToken": first.json()["continuationToken"]})
    assert more.status_code == 201 and more.json()["sessionId"] == first.json()["sessionId"]
    # Another key is another conversation.
    other = post(client, url, {"text": "PR opened", "key": "pr:acme/shop#8"})
    assert other.status_code == 201 and other.json()["sessionId"] != first.json()["sessionId"]


def test_another_tenant_with_the_same_key_gets_its_own_session(alice, mallory, client_for, agents):
    url = "/lab/v1/channels/ops/send"
    alices = post(client_for(alice), url, {"text": "alice here", "key": "T1/C1/171.1"}).json()

    mallorys = post(client_for(mallory), url, {"text": "mallory here", "key": "T1/C1/171.1"})

    assert mallorys.status_code == 201 and mallorys.json()["sessionId"] != alices["sessionId"]
    assert Session.objects.get(pk=mallorys.json()["sessionId"]).principal == mallory
    alice_texts = [e["data"]["text"] for e in events(client_for(alice), alices["sessionId"]) if "text" in e["data"]]
    assert alice_texts == ["alice here"]
    assert client_for(mallory).get(f"/lab/v1/session/{alices['sessionId']}").status_code == 403


def test_a_refused_send_answers_with_the_sessions_status_unless_the_handler_catches_it(alice, client_for, agents):
    client = client_for(alice)
    task = post(client, "/lab/v1/channels/ops/send", {"text": "one job", "key": "job-1", "mode": "task"})
    assert task.status_code == 201

    refused = post(client, "/lab/v1/channels/ops/send", {"text": "and another", "key": "job-1"})

    assert refused.status_code == 409
    assert refused.json() == {
        "error": "task_session",
        "message": "A task session takes no follow-up; start a new session.",
    }
    caught = post(client, "/lab/v1/channels/ops/send-and-say", {"text": "and another", "key": "job-1"})
    assert caught.status_code == 200 and caught.json() == {"refused": "task_session"}


def test_a_handler_that_raises_after_sending_is_502_and_the_message_stays_sent(alice, client_for, agents):
    response = post(client_for(alice), "/lab/v1/channels/ops/send-then-boom", {"text": "hello"})
    assert response.status_code == 502 and response.json()["message"] == "RuntimeError: after sending"
    assert Session.objects.filter(channel="ops").count() == 1


# --- the example, with a turn actually running -----------------------------------------------


def test_the_support_widget_asks_and_continues_its_conversation(live, alice):
    support = live(alice, "support")
    url = "/support/v1/channels/web/ask"

    asked = post(support.client, url, {"question": "Where is order 1042?", "conversation": "w-9"})

    assert asked.status_code == 201, asked.content
    session_id = asked.json()["sessionId"]
    log = support.wait_for(session_id, "turn.completed")
    started = next(e for e in log if e["type"] == "session.started")
    assert started["data"]["channel"] == "web" and started["data"]["title"] == "Where is order 1042?"
    assert [e["data"]["text"] for e in log if e["type"] == "message.received"] == ["Where is order 1042?"]

    again = post(support.client, url, {"question": "Thanks!", "conversation": "w-9"})

    assert again.status_code == 202 and again.json()["sessionId"] == session_id
    assert again.json()["continuationToken"] == asked.json()["continuationToken"] == "web:widget:w-9"
    log = support.wait_for(session_id, "turn.completed", count=2)
    assert [e["data"]["text"] for e in log if e["type"] == "message.received"] == ["Where is order 1042?", "Thanks!"]
    # Without a conversation id, the widget starts afresh.
    fresh = post(support.client, url, {"question": "New question"})
    assert fresh.status_code == 201 and fresh.json()["sessionId"] != session_id
