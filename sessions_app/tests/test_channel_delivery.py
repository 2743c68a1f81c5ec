"""A channel's delivery contract, through HTTP with turns and handlers on a real worker
(the ``switch`` test agent): ``ctx.channel`` in tools, channel handlers and hooks;
``channel.state`` kept between events; ``set_continuation_token`` re-keying the session;
channel tokens (``desk:<key>``) listed by ``GET /v1/sessions`` and taken by
``POST /v1/tools/:name``."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def seen(switch, key: str, until=lambda value: True, timeout: float = 20) -> Any:
    """What the desk handlers noted under ``key`` (``GET /desk/seen``), once it is there
    and ``until`` holds for it."""
    deadline = time.monotonic() + timeout
    while True:
        answer = switch.client.get("/switch/v1/channels/desk/seen", {"key": key}).json()
        value = answer["value"]
        if answer["found"] and until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{key}: {value!r}")
        time.sleep(0.1)


def send(switch, text: str, key: str, **body: Any):
    return switch.client.post("/switch/v1/channels/desk/send", {"text": text, "key": key, **body}, format="json")


def where(switch, token: str):
    return switch.client.post("/switch/v1/tools/where", {"continuationToken": token}, format="json")


def listed_token(switch, session_id: str) -> str | None:
    sessions = switch.client.get("/switch/v1/sessions").json()["sessions"]
    return next(s["continuationToken"] for s in sessions if s["sessionId"] == session_id)


def tool_output(events: list[dict[str, Any]]) -> Any:
    return next(e["data"]["output"] for e in events if e["type"] == "action.result")


def test_a_channel_session_keeps_state_and_is_continued_by_its_token_until_re_keyed(live, alice):
    switch = live(alice, "switch")
    desk = {"id": "desk", "continuationToken": "desk:t-1"}

    started = send(switch, "/call where {}", "t-1")

    assert started.status_code == 201, started.content
    session_id = started.json()["sessionId"]
    # ctx.channel in the turn's tool, the channel handler and the hook
    assert tool_output(switch.wait_for(session_id, "turn.completed")) == {"channel": desk}
    assert seen(switch, f"hook/{session_id}") == desk
    first = seen(switch, f"channel/{session_id}")
    assert first == {"state": {"messages": 1}, "continuationToken": "desk:t-1", "ctx": desk}
    assert listed_token(switch, session_id) == "desk:t-1"
    direct = where(switch, "desk:t-1")
    assert direct.status_code == 200, direct.content
    assert direct.json()["result"] == {"channel": desk}

    again = send(switch, "rekey t-2", "t-1")

    assert again.status_code == 202 and again.json()["sessionId"] == session_id
    switch.wait_for(session_id, "turn.completed", count=2)
    order = seen(switch, f"order/{session_id}", lambda lines: lines.count("hook turn.completed") == 2)
    one_turn = [
        "channel message.received",
        "hook message.received",
        "channel turn.started",  # it raised: logged and skipped, the hook still ran
        "hook turn.started",
        "channel turn.completed",
        "hook turn.completed",
    ]
    assert order == one_turn * 2
    assert seen(switch, f"channel/{session_id}")["state"] == {"messages": 2}
    assert where(switch, "desk:t-1").status_code == 404  # the old key stops resolving
    moved = where(switch, "desk:t-2")
    assert moved.status_code == 200, moved.content
    assert moved.json()["result"] == {"channel": {"id": "desk", "continuationToken": "desk:t-2"}}
    assert listed_token(switch, session_id) == "desk:t-2"
    # The direct calls went into that session's log.
    direct_calls = [
        e for e in switch.events(session_id) if e["type"] == "actions.requested" and e["data"].get("direct")
    ]
    assert len(direct_calls) == 2
    logged = switch.client.get("/switch/v1/logs").json()["lines"]
    assert sum("the desk lamp is broken" in str(line) for line in logged) == 2, logged


def test_a_task_session_has_no_channel_token_and_its_key_takes_no_follow_up(live, alice):
    switch = live(alice, "switch")

    started = send(switch, "/call where {}", "job-1", mode="task")

    assert started.status_code == 201, started.content
    session_id = started.json()["sessionId"]
    assert tool_output(switch.wait_for(session_id, "turn.completed")) == {"channel": None}
    assert seen(switch, f"hook/{session_id}") is None
    assert seen(switch, f"channel/{session_id}")["ctx"] is None
    assert listed_token(switch, session_id) is None
    assert where(switch, "desk:job-1").status_code == 404
    refused = send(switch, "more", "job-1")
    assert refused.status_code == 409 and refused.json()["error"] == "task_session"
