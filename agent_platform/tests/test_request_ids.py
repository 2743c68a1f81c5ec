"""Request ids: accepted from ``X-Request-ID`` or made up, echoed on the response, on the
access log line, stored on the turn, and carried to the worker's JSON log lines and the
agent's ``/v1/logs`` (the session worker runs with ``LOG_FORMAT=json``)."""

from __future__ import annotations

import json
import logging
import re
import time

import pytest
from django.test import Client

pytestmark = pytest.mark.timeout(90)

GENERATED = re.compile(r"[0-9a-f]{32}")


@pytest.mark.django_db
def test_a_plain_request_id_is_echoed_and_a_missing_one_is_made_up():
    client = Client()
    assert client.get("/healthz", HTTP_X_REQUEST_ID="req-42.a:b").headers["X-Request-ID"] == "req-42.a:b"
    assert GENERATED.fullmatch(client.get("/healthz").headers["X-Request-ID"])


@pytest.mark.django_db
@pytest.mark.parametrize("hostile", ["a\nb", "<script>", "x" * 101, "über", "-leading-dash", "a b"])
def test_a_hostile_request_id_is_replaced_and_never_logged(hostile, caplog):
    with caplog.at_level(logging.INFO, logger="agent_platform.access"):
        response = Client().get("/healthz", HTTP_X_REQUEST_ID=hostile)
    assert response.status_code == 200
    assert GENERATED.fullmatch(response.headers["X-Request-ID"])
    assert hostile not in caplog.text


@pytest.mark.django_db
def test_each_request_has_one_access_line_with_method_path_status_duration_and_id(caplog):
    with caplog.at_level(logging.INFO, logger="agent_platform.access"):
        response = Client().get("/no/such/route/", HTTP_X_REQUEST_ID="req-access")
    [line] = [record for record in caplog.records if record.name == "agent_platform.access"]
    assert (line.method, line.path, line.status, line.request_id) == ("GET", "/no/such/route/", 404, "req-access")
    assert line.duration_ms >= 0 and response.status_code == 404
    assert line.getMessage().startswith("GET /no/such/route/ 404 ")


@pytest.mark.django_db
def test_a_refusal_before_the_view_still_carries_the_id():
    response = Client().get("/healthz?x=%00", HTTP_X_REQUEST_ID="req-nul")
    assert response.status_code == 400 and response.headers["X-Request-ID"] == "req-nul"


def test_the_request_id_travels_from_the_web_request_to_the_workers_json_log_and_v1_logs(
    live, alice, client_for, celery_worker_process
):
    client = live(slug="scribe")
    client.client.credentials(**client.client._credentials, HTTP_X_REQUEST_ID="req-travels-1")
    session_id = client.start('/call flag {"reason": "angry customer"}')["sessionId"]
    client.wait_for(session_id, "turn.completed")

    deadline = time.monotonic() + 10
    while True:  # the worker's console is a file it writes to as it goes
        lines = celery_worker_process.log_path.read_text(errors="replace").splitlines()
        found = [json.loads(line) for line in lines if "angry customer" in line and line.startswith("{")]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    [record] = found
    assert record["message"] == "flagged: angry customer"
    assert record["request_id"] == "req-travels-1"
    assert record["level"] == "WARNING" and record["logger"].endswith(".tools.flag")
    assert record["session_id"] == session_id and record["agent_slug"] == "scribe"
    assert "time" in record

    [line] = [x for x in client_for(alice).get("/scribe/v1/logs").json()["lines"] if "angry" in x["message"]]
    assert line["requestId"] == "req-travels-1" and line["sessionId"] == session_id


def test_plain_lines_name_the_request_only_inside_one():
    from agent_platform.request_ids import PlainLines

    def line(**extra: str) -> str:
        record = logging.LogRecord("agents.x", logging.INFO, __file__, 1, "said %s", ("hi",), None)
        record.__dict__.update(extra)
        return PlainLines().format(record)

    assert line(request_id="req-7").endswith(" INFO agents.x [req-7]: said hi")
    assert line(request_id="").endswith(" INFO agents.x: said hi")


def _log_line(client, slug: str, text: str, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        found = [x for x in client.get(f"/{slug}/v1/logs?limit=1000").json()["lines"] if text in x["message"]]
        if found or time.monotonic() > deadline:
            assert found, f"no line with {text!r} on /{slug}/v1/logs"
            return found[0]
        time.sleep(0.1)


def test_a_hook_woken_by_a_turns_events_logs_under_the_id_of_the_request_that_asked_for_it(live, alice, client_for):
    client = live(slug="judge")
    client.client.credentials(**client.client._credentials, HTTP_X_REQUEST_ID="req-hook-1")
    session_id = client.start("hello")["sessionId"]
    client.wait_for(session_id, "turn.completed")
    line = _log_line(client_for(alice), "judge", "hook saw a turn.completed")
    assert line["requestId"] == "req-hook-1" and line["sessionId"] == session_id


def test_a_schedule_fired_by_beat_gets_a_new_id_that_its_turn_keeps(live):
    from sessions_app.models import ScheduleFire, ScheduleFireStatus, Turn
    from sessions_app.queues import TaskName, send

    live(slug="clock")  # the test's tasks go to the worker's queue
    send(TaskName.FIRE_SCHEDULE, "clock", "minutely")  # as beat sends it: from no request
    deadline = time.monotonic() + 20
    while not (fire := ScheduleFire.objects.filter(schedule_id="minutely", status=ScheduleFireStatus.DONE).first()):
        assert time.monotonic() < deadline, "the schedule did not fire"
        time.sleep(0.1)
    [turn] = Turn.objects.filter(session_id__in=fire.session_ids)
    assert GENERATED.fullmatch(turn.request_id)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("sent", "echoed"), [("req-ws-1", "req-ws-1"), ("a\nb", None), (None, None)])
async def test_a_websocket_handshake_is_answered_with_its_request_id(alice, sent, echoed):
    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator

    from agent_platform.asgi import application
    from agent_platform.tests.factories import issue_token

    token = await database_sync_to_async(issue_token)(alice)
    headers = [(b"x-request-id", sent.encode())] if sent else []
    communicator = WebsocketCommunicator(
        application, "/ws/weather/session/ses_none", subprotocols=["bearer", token], headers=headers
    )
    await communicator.send_input({"type": "websocket.connect"})
    accepted = await communicator.receive_output(timeout=5)
    assert accepted["type"] == "websocket.accept"
    [value] = [v.decode() for k, v in accepted.get("headers", []) if k == b"x-request-id"]
    assert value == echoed if echoed else GENERATED.fullmatch(value)
    await communicator.disconnect()
