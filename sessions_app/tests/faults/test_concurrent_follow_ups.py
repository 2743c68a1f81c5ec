"""Row 9: twenty follow-ups at once on one session, under each admission policy.

Half go over HTTP to daphne, half through the API in this process on threads of
their own (daphne runs sync views one at a time; these race it for real in
Postgres). At most one turn runs per session whatever arrives, each policy
admits by its rule, and one ``Idempotency-Key`` gets one answer.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections

from sessions_app.models import Turn
from sessions_app.tests.faults.tools import open_gate, types

pytestmark = [pytest.mark.fault, pytest.mark.slow]

BURST = 20


@pytest.fixture
def burst(fault, token, client_for, alice, one_running_turn_per_session):
    """``burst(session, messages, admission, key=None)`` -> ``[(status, body)]`` in message order."""

    def send(session: str, messages: list[str], admission: str, key: str | None = None) -> list[tuple[int, Any]]:
        answers: list[tuple[int, Any]] = [(0, None)] * len(messages)
        barrier = threading.Barrier(len(messages))
        headers = {"Idempotency-Key": key} if key else {}

        def over_http(n: int, client: Any) -> None:
            barrier.wait()
            answers[n] = client.follow_up(session, messages[n], headers=headers, admission=admission)

        def in_process(n: int, api: Any) -> None:
            try:
                barrier.wait()
                extra = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
                body = {"message": messages[n], "admission": admission}
                response = api.post(f"/faults/v1/session/{session}", body, format="json", **extra)
                answers[n] = (response.status_code, response.json())
            finally:
                connections.close_all()

        threads = [
            threading.Thread(target=over_http, args=(n, fault.client(token)))
            if n % 2
            else threading.Thread(target=in_process, args=(n, client_for(alice)))
            for n in range(len(messages))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        return answers

    return send


def idle_session(fault, token) -> tuple[Any, str]:
    client = fault.client(token)
    started = client.start("hello")
    client.wait_turn_ended(started["sessionId"], started["turnId"])
    return client, started["sessionId"]


def running_turns_at_most_one(session: str) -> None:
    assert Turn.objects.filter(session_id=session, status="running").count() <= 1


def received_order(events: list[dict[str, Any]]) -> list[str]:
    """Texts of the follow-ups in the order the log admitted them."""
    return [e["data"]["text"] for e in events if e["type"] == "message.received"][1:]


def test_reject_admits_one_and_refuses_the_rest_with_409(fault, token, burst):
    client, session = idle_session(fault, token)
    answers = burst(session, ['/call effect {"key": "r", "gate": "r"}'] * BURST, "reject")

    statuses = sorted(status for status, _ in answers)
    assert statuses == [202] + [409] * (BURST - 1), answers
    assert all(body["error"] == "session_busy" for status, body in answers if status == 409)
    [turn] = [body["turnId"] for status, body in answers if status == 202]
    running_turns_at_most_one(session)
    open_gate(session, "r")
    assert client.wait_turn_ended(session, turn)["type"] == "turn.completed"
    assert Turn.objects.filter(session_id=session).count() == 2


def test_enqueue_runs_every_message_as_its_own_turn_in_arrival_order(fault, token, burst):
    client, session = idle_session(fault, token)
    first = client.follow_up(session, '/call effect {"key": "first", "gate": "q"}')[1]["turnId"]
    answers = burst(session, [f"message {n}" for n in range(BURST)], "enqueue")

    assert [status for status, _ in answers] == [202] * BURST, answers
    assert len({body["turnId"] for _, body in answers}) == BURST
    running_turns_at_most_one(session)
    open_gate(session, "q")
    client.wait_for(session, "turn.completed", count=BURST + 2, timeout=60)  # hello, first, and the twenty
    events = client.events(session)
    order = received_order(events)[1:]
    results = [e["data"]["result"] for e in events if e["type"] == "turn.completed"][2:]
    assert results == [f"echo: {text}" for text in order]
    assert sorted(order) == sorted(f"message {n}" for n in range(BURST))
    assert client.wait_turn_ended(session, first)["type"] == "turn.completed"


def test_coalesce_drains_the_queued_messages_into_one_turn(fault, token, burst):
    client, session = idle_session(fault, token)
    first = client.follow_up(session, '/call effect {"key": "first", "gate": "c"}')[1]["turnId"]
    client.wait_for(session, "actions.requested", turn_id=first)
    answers = burst(session, [f"part {n}" for n in range(BURST)], "coalesce")

    assert [status for status, _ in answers] == [202] * BURST, answers
    [turn] = {body["turnId"] for _, body in answers}
    open_gate(session, "c")
    end = client.wait_turn_ended(session, turn)
    assert end["type"] == "turn.completed"
    order = received_order(client.events(session))[1:]
    assert end["data"]["result"] == "echo: " + "\n".join(order)
    assert Turn.objects.filter(session_id=session).count() == 3
    assert client.wait_turn_ended(session, first)["type"] == "turn.completed"


def test_preempt_completes_only_the_last_message_and_interrupts_the_others(fault, token, burst):
    client, session = idle_session(fault, token)
    messages = [f'/call effect {{"key": "p{n}", "gate": "p"}}' for n in range(BURST)]
    answers = burst(session, messages, "preempt")

    assert [status for status, _ in answers] == [202] * BURST, answers
    client.wait_for(session, "turn.failed", count=BURST - 1)
    running_turns_at_most_one(session)
    open_gate(session, "p")
    events = client.wait_for(session, "turn.completed", count=2)
    ends = {e["turnId"]: e for e in events if e["type"] in ("turn.completed", "turn.failed")}
    admitted = [e["turnId"] for e in events if e["type"] == "message.received"][1:]
    last = admitted[-1]
    assert ends[last]["type"] == "turn.completed"
    assert all(ends[turn]["data"] == {"message": "turn interrupted"} for turn in admitted[:-1])
    assert types(events).count("turn.completed") == 2  # hello and the last one


def test_the_same_idempotency_key_gets_one_turn_and_one_answer(fault, token, burst):
    client, session = idle_session(fault, token)
    answers = burst(session, ["once, please"] * BURST, "enqueue", key="follow-up-1")

    assert {status for status, _ in answers} == {202}, answers
    assert len({repr(sorted(body.items())) for _, body in answers}) == 1
    [turn] = {body["turnId"] for _, body in answers}
    assert client.wait_turn_ended(session, turn)["type"] == "turn.completed"
    assert Turn.objects.filter(session_id=session).count() == 2
    assert received_order(client.events(session)) == ["once, please"]
