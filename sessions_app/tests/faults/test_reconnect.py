"""Row 8: a client that drops and reconnects with ``startIndex`` during a live turn
misses nothing and sees nothing twice, over NDJSON and WebSocket alike.

Events are produced by a turn on the worker and by a writer in this process at
random moments, while the client disconnects after a random number of records
(drawn by hypothesis) and resumes from the index after the last it saw. The
records it gets, concatenated, are the log.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from django.db import connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_platform.tests.factories import issue_token
from agents.events import EventType
from sessions_app.eventlog import append_event
from sessions_app.tests.faults.stack import raw_get
from sessions_app.tests.faults.wsclient import WebSocket

pytestmark = [pytest.mark.fault, pytest.mark.slow]

SENTINEL = {"sentinel": True}
CALLS = 8


def read_some(fault, token: str, session: str, transport: str, start: int, count: int) -> list[dict[str, Any]]:
    """Up to ``count`` records from ``start`` on, then disconnect (the last ends the log)."""
    got: list[dict[str, Any]] = []
    if transport == "ws":
        socket = WebSocket(fault.port, f"/ws/faults/session/{session}?startIndex={start}", token)
        try:
            for record in socket.records():
                got.append(record)
                if len(got) == count or record["data"] == SENTINEL:
                    break
        finally:
            socket.close()
        return got
    stream = fault.client(token).api.stream(f"/faults/v1/session/{session}/stream?startIndex={start}")
    try:
        for received in stream:
            got.append(received.event)
            if len(got) == count or received.event["data"] == SENTINEL:
                break
    finally:
        stream.close()
    return got


def produce(fault, token: str, session: str, seed: int) -> None:
    """A live turn on the worker and, beside it, events appended here at random moments;
    then the sentinel, the last event of the log."""
    client = fault.client(token)
    message = "\n".join(f'/call effect {{"key": "k{n}", "hold": 0.1}}' for n in range(CALLS))
    status, answer = client.follow_up(session, message)
    assert status == 202, answer
    chance = random.Random(seed)
    stop = threading.Event()

    def write() -> None:
        try:
            while not stop.is_set():
                append_event(session, EventType.MESSAGE_APPENDED, {"text": "x" * chance.randint(1, 300)})
                stop.wait(chance.uniform(0, 0.05))
        finally:
            connections.close_all()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        client.wait_turn_ended(session, answer["turnId"])
        client.wait_for(session, "session.waiting", count=2)
    finally:
        stop.set()
        writer.join(timeout=10)
    try:
        append_event(session, EventType.ARTIFACT_TAGGED, SENTINEL)
    finally:
        connections.close_all()  # this thread's connection


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plan=st.lists(st.tuples(st.sampled_from(["ndjson", "ws"]), st.integers(1, 12)), min_size=1, max_size=10),
    seed=st.integers(0, 2**16),
)
def test_reconnecting_with_start_index_during_a_live_turn_gets_the_log_exactly(fault, token, plan, seed):
    client = fault.client(token)
    started = client.start("hello")
    session = started["sessionId"]
    client.wait_turn_ended(session, started["turnId"])
    producer = threading.Thread(target=produce, args=(fault, token, session, seed))
    producer.start()
    seen: list[dict[str, Any]] = []
    try:
        step = 0
        while not seen or seen[-1]["data"] != SENTINEL:
            transport, count = plan[step % len(plan)] if step < 3 * len(plan) else ("ndjson", 10_000)
            step += 1
            batch = read_some(fault, token, session, transport, len(seen), count)
            assert [r["index"] for r in batch] == list(range(len(seen), len(seen) + len(batch))), (transport, batch)
            seen += batch
    finally:
        producer.join(timeout=60)
    assert seen == client.events(session)


def test_a_start_index_past_the_end_waits_for_that_event(fault, token):
    client = fault.client(token)
    started = client.start("hello")
    client.wait_turn_ended(started["sessionId"], started["turnId"])
    end = len(client.events(started["sessionId"]))
    socket = WebSocket(fault.port, f"/ws/faults/session/{started['sessionId']}?startIndex={end + 1}", token)
    try:
        client.follow_up(started["sessionId"], "more")
        first = next(socket.records())
        assert first["index"] == end + 1
    finally:
        socket.close()
    client.wait_for(started["sessionId"], "session.waiting", count=2)


@pytest.mark.parametrize("start", ["-1", "abc", "1.5"])
def test_a_bad_start_index_is_400_and_another_tenants_session_403(fault, token, mallory, start):
    client = fault.client(token)
    started = client.start("hello")
    path = f"/faults/v1/session/{started['sessionId']}/stream"
    status, kind, body = raw_get(fault.port, f"{path}?startIndex={start}", token)
    assert (status, kind) == (400, "application/json"), body
    status, _, body = raw_get(fault.port, f"{path}?startIndex=0", issue_token(mallory))
    assert status == 403 and started["sessionId"].encode() not in body
    client.wait_turn_ended(started["sessionId"], started["turnId"])
