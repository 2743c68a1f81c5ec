"""``GET /<slug>/v1/session/:id/stream`` as Server-Sent Events (``Accept: text/event-stream``)
and the heartbeats of idle streams, through a real daphne and a real HTTP client (httpx).

Events are appended by this process (the test database, committed), so the server's
stream hears them through the doorbell as it would a worker's."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from agent_platform.tests.daphne import serve
from agent_platform.tests.factories import issue_token
from agents.events import EventType
from agents.registry import get_agent
from sessions_app.eventlog import NewEvent, append_events
from sessions_app.tests.factories import SessionFactory

pytestmark = [pytest.mark.django_db(transaction=True)]

HEARTBEAT = 0.3  # seconds, the server's PLATFORM_STREAM_HEARTBEAT_SECONDS
WAIT = 5.0  # seconds: the longest any read may take
SSE = {"Accept": "text/event-stream"}


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[str]:
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the server process needs DATABASE_URL (Postgres)")
    env = {"PLATFORM_DEV": "0", "PLATFORM_STREAM_HEARTBEAT_SECONDS": str(HEARTBEAT)}
    for daphne in serve(tmp_path_factory, env, "/weather/v1/health"):
        yield daphne.url


@pytest.fixture
def session(alice):
    return SessionFactory(principal=alice, agent=get_agent("weather"))


@pytest.fixture
def auth(alice) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(alice)}"}


def append_texts(session_id: str, count: int) -> None:
    append_events(session_id, [NewEvent(EventType.MESSAGE_APPENDED, {"text": f"t{n}"}) for n in range(count)])


def stream_url(server: str, session_id: str, query: str = "") -> str:
    return f"{server}/weather/v1/session/{session_id}/stream{query}"


class SseReader:
    """The SSE events (and comments) of one streaming response, parsed as the spec says."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.iter_lines()

    def next(self) -> dict[str, str]:
        """The next event's fields, or ``{"comment": ...}`` for a comment line."""
        fields: dict[str, str] = {}
        for line in self.lines:
            if line.startswith(":"):
                if not fields:
                    return {"comment": line[1:].strip()}
                continue
            if not line:
                if fields:
                    return fields
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        raise AssertionError(f"the stream ended with {fields!r} pending")

    def events(self, count: int) -> list[dict[str, str]]:
        """The next ``count`` events, skipping heartbeats."""
        out: list[dict[str, str]] = []
        while len(out) < count:
            item = self.next()
            if "comment" not in item:
                out.append(item)
        return out


def test_sse_events_carry_the_index_as_id_and_the_type_as_event(server, session, auth):
    append_texts(session.id, 3)
    with httpx.stream("GET", stream_url(server, session.id), headers={**auth, **SSE}, timeout=WAIT) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        reader = SseReader(response)
        replayed = reader.events(3)
        append_texts(session.id, 1)
        live = reader.events(1)
    for position, event in enumerate(replayed + live):
        record = json.loads(event["data"])
        assert event["id"] == str(position) == str(record["index"])
        assert event["event"] == record["type"] == "message.appended"
        assert record["sessionId"] == session.id


def test_last_event_id_resumes_right_after_that_index_and_wins_over_start_index(server, session, auth):
    append_texts(session.id, 6)
    headers = {**auth, **SSE, "Last-Event-ID": "3"}
    url = stream_url(server, session.id, "?startIndex=0")
    with httpx.stream("GET", url, headers=headers, timeout=WAIT) as response:
        assert response.status_code == 200
        assert [event["id"] for event in SseReader(response).events(2)] == ["4", "5"]


def test_an_idle_sse_stream_sends_ping_comments(server, session, auth):
    with httpx.stream("GET", stream_url(server, session.id), headers={**auth, **SSE}, timeout=WAIT) as response:
        reader = SseReader(response)
        assert reader.next() == {"comment": "ping"}
        assert reader.next() == {"comment": "ping"}
        append_texts(session.id, 1)
        assert reader.events(1)[0]["id"] == "0"  # events still come between the pings


def test_ndjson_stays_the_default_and_sends_heartbeats_only_when_asked(server, session, auth):
    append_texts(session.id, 1)
    url = stream_url(server, session.id, "?heartbeat=1")
    with httpx.stream("GET", url, headers=auth, timeout=WAIT) as response:
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = response.iter_lines()
        assert json.loads(next(lines))["index"] == 0
        assert json.loads(next(lines)) == {"type": "heartbeat"}
        append_texts(session.id, 1)
        record = next(record for record in map(json.loads, lines) if record != {"type": "heartbeat"})
        assert record["index"] == 1


def test_without_heartbeat_an_idle_ndjson_stream_sends_only_events(server, session, auth):
    # Raw socket: a plain NDJSON stream sends its headers with its first event.
    port = int(server.rsplit(":", 1)[1])
    request = (
        f"GET /weather/v1/session/{session.id}/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: {auth['Authorization']}\r\n\r\n"
    ).encode()
    beating_url = stream_url(server, session.id, "?heartbeat=1")
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as plain:
        plain.sendall(request)
        with httpx.stream("GET", beating_url, headers=auth, timeout=WAIT) as beating:
            beats = beating.iter_lines()
            assert [json.loads(next(beats)) for _ in range(2)] == [{"type": "heartbeat"}] * 2
        append_texts(session.id, 1)  # after two heartbeat intervals of silence on the plain one
        received = b""
        while b'"index":0' not in received:
            piece = plain.recv(65536)
            assert piece, "the plain stream closed"
            received += piece
    assert received.startswith(b"HTTP/1.1 200")
    assert b"heartbeat" not in received


def test_resuming_an_ended_session_past_its_end_is_204_so_event_source_stops(server, session, auth):
    append_events(session.id, [NewEvent(EventType.SESSION_COMPLETED, {})])
    response = httpx.get(stream_url(server, session.id), headers={**auth, **SSE, "Last-Event-ID": "0"}, timeout=WAIT)
    assert response.status_code == 204
    # From the start, the log is replayed and the stream ends after session.completed.
    with httpx.stream("GET", stream_url(server, session.id), headers={**auth, **SSE}, timeout=WAIT) as response:
        reader = SseReader(response)
        assert [event["event"] for event in reader.events(1)] == ["session.completed"]
        assert list(reader.lines) == []


@pytest.mark.parametrize(
    ("headers", "query"),
    [({"Last-Event-ID": "-1"}, ""), ({"Last-Event-ID": "abc"}, ""), ({}, "?heartbeat=maybe")],
)
def test_a_bad_last_event_id_or_heartbeat_flag_is_400_json(server, session, auth, headers, query):
    response = httpx.get(stream_url(server, session.id, query), headers={**auth, **SSE, **headers}, timeout=WAIT)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


def test_another_principal_gets_403_on_the_sse_stream(server, session, bob):
    headers = {"Authorization": f"Bearer {issue_token(bob)}", **SSE}
    response = httpx.get(stream_url(server, session.id), headers=headers, timeout=WAIT)
    assert response.status_code == 403
    assert set(response.json()) == {"error", "message"}
