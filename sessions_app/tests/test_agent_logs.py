"""What agent code logs, with any logger, reaches that agent's ``/v1/logs`` (and so the
playground's Logs tab) with the session id: the ``scribe`` agent's ``note`` tool logs
with ``logging.getLogger(__name__)``, in a turn on a real worker, and the ``weather``
example's ``audit/usage`` hook with a logger of its own name."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.timeout(90)


def test_what_a_tool_logs_with_its_own_logger_is_on_the_agents_logs_with_the_session(live, alice, client_for):
    client = live(slug="scribe")
    session_id = client.start('/call note {"text": "milk", "times": 2}')["sessionId"]
    client.wait_for(session_id, "turn.completed")
    deadline = time.monotonic() + 20  # the worker stores its log lines beside the turn, not before its end
    while True:
        lines = client_for(alice).get("/scribe/v1/logs").json()["lines"]
        found = [line for line in lines if "noted" in line["message"]]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    [line] = found
    assert line["message"] == "noted 'milk' 2 time(s)"
    assert line["sessionId"] == session_id and line["level"] == "INFO"
    assert line["logger"].endswith(".tools.note")
    # Another agent's logs do not have it.
    assert not [x for x in client_for(alice).get("/lab/v1/logs").json()["lines"] if "noted" in x["message"]]


def test_what_a_hook_logs_is_on_the_agents_logs_with_the_session(live, alice, client_for):
    client = live(slug="weather")
    session_id = client.start('/call get_weather {"city": "Oslo"}')["sessionId"]
    client.wait_for(session_id, "turn.completed")
    deadline = time.monotonic() + 20  # hooks run after the turn, from the dispatcher's task
    while True:
        lines = client_for(alice).get("/weather/v1/logs").json()["lines"]
        found = [line for line in lines if f"session={session_id}" in line["message"]]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    [line] = found
    assert line["message"].startswith("turn completed agent=weather") and line["sessionId"] == session_id


@pytest.mark.django_db
def test_what_a_channel_route_handler_logs_is_on_the_agents_logs(live_agents_dir, settings, alice, client_for):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    client = client_for(alice)
    assert client.post("/scribe/v1/channels/desk/ring", {}, format="json").json() == {"rang": "desk"}
    [line] = [line for line in client.get("/scribe/v1/logs").json()["lines"] if "desk bell" in line["message"]]
    assert (line["message"], line["level"], line["logger"]) == ("the desk bell rang on desk", "WARNING", "scribe.desk")


# transaction=True: the tool runs on a thread of its own, whose log line is written on
# that thread's connection, which sees only committed rows (the agent's, say).
@pytest.mark.django_db(transaction=True)
def test_what_a_tool_called_directly_logs_is_on_the_agents_logs(live_agents_dir, settings, alice, client_for):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    client = client_for(alice)
    answer = client.post("/scribe/v1/tools/note", {"input": {"text": "eggs", "times": 3}}, format="json")
    assert answer.status_code == 200, answer.content
    lines = client.get("/scribe/v1/logs").json()["lines"]
    [line] = [line for line in lines if "noted 'eggs'" in line["message"]]
    assert line["message"] == "noted 'eggs' 3 time(s)" and line["logger"].endswith(".tools.note")
