"""Hooks are called ``handler(event, ctx)`` and a channel's ``events`` handlers
``handler(event, channel, ctx)``: the event first. Through a real webhook and a real
turn on the worker (the ``relay`` test agent records each call in its kv)."""

from __future__ import annotations

import time

import pytest

from sessions_app.models import KVEntry

pytestmark = pytest.mark.django_db(transaction=True)


def recorded(key: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entry = KVEntry.objects.filter(agent__slug="relay", key=key).first()
        if entry is not None:
            return entry.value
        time.sleep(0.1)
    raise AssertionError(f"nothing recorded under {key!r}")


def test_a_webhooks_turn_reaches_the_channel_handler_and_the_hook_event_first(live, alice):
    relay = live(alice, "relay")

    answer = relay.client.post("/relay/v1/channels/inbox/in", {"text": "hello"}, format="json")

    assert answer.status_code == 201, answer.content
    session_id = answer.json()["sessionId"]
    relay.wait_for(session_id, "turn.completed")
    assert recorded(f"channel/{session_id}") == {"type": "turn.completed", "channel": "inbox", "sessionId": session_id}
    assert recorded(f"hook/{session_id}") == {"type": "turn.completed", "agent": "relay"}


def test_a_session_of_the_http_api_reaches_the_hook_event_first(live, alice):
    relay = live(alice, "relay")

    session_id = relay.start("hello")["sessionId"]

    relay.wait_for(session_id, "turn.completed")
    assert recorded(f"hook/{session_id}") == {"type": "turn.completed", "agent": "relay"}
    # The inbox channel's handlers are for its own sessions only.
    assert not KVEntry.objects.filter(key=f"channel/{session_id}").exists()
