"""Row 7: a client that stops reading costs the server a bounded amount of memory,
slows down nobody else, is closed 4008 ``lagging``, and gets everything on reconnect.

Under daphne (which has no backpressure of its own, daphne#170) the WebSocket
consumer waits for the connection's write buffer to drain before each send, so
a stalled socket holds at most 64 KiB there plus the follower's one batch (500
events); after ``SEND_TIMEOUT`` without progress it is closed with 4008.

An NDJSON reader has no such bound: daphne buffers whatever the client has not
read, at most the log from its ``startIndex`` (the follower itself holds one
batch). A slow NDJSON reader still gets every event in order when it reads.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connections

from agents.events import EventType
from bench.harness import rss_kb
from sessions_app.consumers import SEND_TIMEOUT
from sessions_app.eventlog import NewEvent, append_event, append_events
from sessions_app.tests.faults.stack import wait_until
from sessions_app.tests.faults.wsclient import WebSocket

pytestmark = [pytest.mark.fault, pytest.mark.slow]

EVENTS = 10_000
BATCH = 250
PAYLOAD = 2_000  # characters per event: 10,000 events are ~20 MB on the wire
RSS_GROWTH_LIMIT_KB = 12 * 1024
# Seconds from append to a reading client on another session: a doorbell may be lost
# (the channel layer is at-most-once), and then the 1 s poll finds the event.
LATENCY_BUDGET = 2.0


def idle_session(fault, token) -> str:
    client = fault.client(token)
    started = client.start("hello")
    client.wait_turn_ended(started["sessionId"], started["turnId"])
    client.wait_for(started["sessionId"], "session.waiting")
    return started["sessionId"]


class Reader(threading.Thread):
    """Reads a WebSocket as fast as it can, stamping each record with its arrival time."""

    def __init__(self, socket: WebSocket) -> None:
        super().__init__(daemon=True)
        self.socket = socket
        self.arrived: dict[int, float] = {}
        self.records: list[dict[str, Any]] = []

    def run(self) -> None:
        try:
            for record in self.socket.records():
                self.arrived[record["index"]] = time.monotonic()
                self.records.append(record)
        except OSError:
            pass


def test_a_websocket_that_stops_reading_is_bounded_closed_4008_and_resumes(fault, token):
    stalled_session, other_session = idle_session(fault, token), idle_session(fault, token)
    stalled = WebSocket(fault.port, f"/ws/faults/session/{stalled_session}?startIndex=0", token, rcvbuf=4096)
    reader = Reader(WebSocket(fault.port, f"/ws/faults/session/{other_session}?startIndex=0", token))
    reader.start()
    try:
        stalled_then_resumed(fault, token, stalled, stalled_session, reader, other_session)
    finally:
        stalled.close()
        reader.socket.close()
        reader.join(timeout=10)


def stalled_then_resumed(fault, token, stalled, stalled_session, reader, other_session) -> None:
    base = rss_kb(fault.web.pid)
    peak = [base]
    sent_at: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_kb(fault.web.pid))
            time.sleep(0.05)

    def ping_other_session() -> None:
        try:
            while not done.is_set():
                before = time.monotonic()
                sent_at[append_event(other_session, EventType.MESSAGE_APPENDED, {"text": "ping"}).index] = before
                time.sleep(0.1)
        finally:
            connections.close_all()

    helpers = [threading.Thread(target=sample), threading.Thread(target=ping_other_session)]
    for helper in helpers:
        helper.start()
    try:
        for _ in range(EVENTS // BATCH):
            append_events(stalled_session, [NewEvent(EventType.MESSAGE_APPENDED, {"text": "x" * PAYLOAD})] * BATCH)

        # The server gives up on the socket: too far behind the log, or no progress for SEND_TIMEOUT.
        def closed() -> bool:
            log = fault.web.log_path.read_text(errors="replace")
            return any(f"closing a {how} stream of {stalled_session}" in log for how in ("lagging", "stalled"))

        wait_until(closed, SEND_TIMEOUT + 20, "the stalled socket to be closed")
    finally:
        done.set()
        for helper in helpers:
            helper.join(timeout=10)

    growth = peak[0] - base
    assert growth < RSS_GROWTH_LIMIT_KB, f"daphne grew {growth} KiB (from {base}) for a client that stopped reading"
    wait_until(lambda: set(sent_at) <= set(reader.arrived), 5, "the other session's events")
    latencies = [reader.arrived[index] - at for index, at in sent_at.items()]
    assert max(latencies) < LATENCY_BUDGET, sorted(latencies)[-5:]

    # What the stalled client reads when it reads again: the start of the log, in order, then 4008.
    got = list(stalled.records())
    assert (stalled.close_code, stalled.close_reason) == (4008, "lagging")
    assert [r["index"] for r in got] == list(range(len(got)))
    assert len(got) < EVENTS  # it was closed long before the end

    # It reconnects from the index after its last record and gets everything.
    log_length = len(fault.client(token).events(stalled_session))
    resumed = WebSocket(fault.port, f"/ws/faults/session/{stalled_session}?startIndex={len(got)}", token)
    try:
        for record in resumed.records():
            got.append(record)
            if record["index"] == log_length - 1:
                break
    finally:
        resumed.close()
    assert [r["index"] for r in got] == list(range(log_length))


def test_a_slow_ndjson_reader_gets_every_event_in_order(fault, token):
    session = idle_session(fault, token)
    stream = fault.client(token).api.stream(f"/faults/v1/session/{session}/stream?startIndex=0")
    try:
        first = next(iter(stream))
        for _ in range(8):
            append_events(session, [NewEvent(EventType.MESSAGE_APPENDED, {"text": "y" * PAYLOAD})] * BATCH)
        time.sleep(1.0)  # the reader is busy elsewhere meanwhile: daphne buffers for it
        log_length = len(fault.client(token).events(session))
        got = [first.event]
        for received in stream:
            got.append(received.event)
            if received.event["index"] == log_length - 1:
                break
    finally:
        stream.close()
    assert [r["index"] for r in got] == list(range(log_length))
