"""Sessions driven over HTTP with turns run by a real Celery worker process (Redis
broker, the test database). ``LiveClient`` wraps an API client with the waits a
user's program would do."""

from __future__ import annotations

import time
from typing import Any

from rest_framework.test import APIClient

TIMEOUT = 30.0


def wait_settled(timeout: float) -> None:
    """Until no turn is queued or running and every session has settled after its last
    turn (a test's turns are all over, and the worker is done with them)."""
    from sessions_app.models import Session, SessionStatus, Turn, TurnStatus

    deadline = time.monotonic() + timeout
    busy = Turn.objects.filter(status__in=(TurnStatus.QUEUED, TurnStatus.RUNNING))
    unsettled = Session.objects.filter(status=SessionStatus.RUNNING)
    while busy.exists() or unsettled.exists():
        if time.monotonic() > deadline:
            turns = list(busy.values_list("pk", "status", "attempts"))
            sessions = list(unsettled.values_list("pk", flat=True))
            raise AssertionError(f"still busy after the test: turns {turns}, running sessions {sessions}")
        time.sleep(0.1)


class LiveClient:
    def __init__(self, client: APIClient, slug: str) -> None:
        self.client = client
        self.slug = slug

    def start(self, message: str, **body: Any) -> dict[str, Any]:
        response = self.client.post(f"/{self.slug}/v1/session", {"message": message, **body}, format="json")
        assert response.status_code == 201, response.content
        return response.json()

    def follow_up(self, session_id: str, message: str, **body: Any) -> Any:
        return self.client.post(f"/{self.slug}/v1/session/{session_id}", {"message": message, **body}, format="json")

    def events(self, session_id: str) -> list[dict[str, Any]]:
        response = self.client.get(f"/{self.slug}/v1/session/{session_id}/events")
        assert response.status_code == 200, response.content
        return response.json()["events"]

    def wait_for(self, session_id: str, type: str, count: int = 1, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
        """The session's events once ``count`` events of ``type`` are in the log."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events(session_id)
            if sum(event["type"] == type for event in events) >= count:
                return events
            if time.monotonic() > deadline:
                raise AssertionError(f"no {count}x {type} within {timeout} s: {[e['type'] for e in events]}")
            time.sleep(0.05)

    def state(self, session_id: str) -> dict[str, Any]:
        return self.client.get(f"/{self.slug}/v1/session/{session_id}").json()


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def assert_gapless(events: list[dict[str, Any]]) -> None:
    assert [event["index"] for event in events] == list(range(len(events)))


def assert_turns_ended_once(events: list[dict[str, Any]]) -> None:
    """Every started turn has exactly one terminal event."""
    ends: dict[str, int] = {}
    for event in events:
        if event["type"] in {"turn.completed", "turn.failed"}:
            ends[event["turnId"]] = ends.get(event["turnId"], 0) + 1
    started = {event["turnId"] for event in events if event["type"] == "turn.started"}
    assert started <= set(ends), (started, ends)
    assert all(count == 1 for count in ends.values()), ends
