"""Turns as a client sees them, for ``bench/run.py``: the running stack, one new-session
turn timed part by part, and follow-up turns on a session whose stream stays open."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness import TIMEOUT, Api, BenchError, Process, Received, Stream
from table import Row, ms

AGENT = "weather"
# The weather example caps itself at max_running_turns=4: many clients at once would
# measure that cap (a turn over it is put back and retried 0.5 s later), not the
# platform. The benchmarks with many turns at once use a copy without the cap.
UNCAPPED = "weather-nocap"


def sessions(agent: str) -> str:
    return f"/{agent}/v1/session"


@dataclass
class Stack:
    """The distributed form this run started: where it listens and its servers."""

    port: int
    token: str | None
    web: Process
    worker: Process
    database: str
    database_url: str
    # A second tenant's token, for the fairness benchmark (tenant A uses ``token``).
    other_token: str | None = None
    # How the worker was started (its argv).
    worker_command: list[str] = field(default_factory=list)
    # Stream paths of sessions left idle (waiting) by earlier benchmarks, for the idle-stream one.
    idle_streams: list[str] = field(default_factory=list)
    # The Slack benchmark's: a token of the ``slack`` principal, and its fake Slack's port.
    slack_token: str | None = None
    slack_port: int = 0
    # The servers' environment (a benchmark that starts another process, e.g. beat).
    env: dict[str, str] = field(default_factory=dict)
    # The worker of the schedules queue (schedules, eval runs), as compose starts it.
    schedules_worker: Process | None = None

    def api(self, token: str | None = None, timeout: float = TIMEOUT) -> Api:
        return Api(self.port, token or self.token, timeout)

    def left_idle(self, session_id: str, agent: str = AGENT) -> None:
        self.idle_streams.append(f"{sessions(agent)}/{session_id}/stream?startIndex=0")


@dataclass
class TurnTiming:
    """Where one turn's time went, in seconds. Server times are the events' ``at``
    (same machine, same clock as the client's ``time.time()``)."""

    total: float  # POST sent -> turn.completed read on the stream
    post: float  # POST sent -> 201 read
    open: float  # stream GET sent -> 200 headers read
    to_started: float  # POST sent -> turn.started recorded (web + broker + worker pick-up)
    run: float  # turn.started -> turn.completed recorded (the worker running the turn)
    deliver: float  # turn.completed recorded -> read by the client (doorbell + read + send)
    sent: float = 0.0  # when the POST was sent (time.time()), to place turns on one time line


def timed_turn(
    api: Api, message: str, settle: bool = False, agent: str = AGENT, timeout: float = TIMEOUT
) -> tuple[TurnTiming, str]:
    """Start a session with ``message``, follow its stream from index 0 until the turn
    completes (and, with ``settle``, until the session is waiting again, untimed)."""
    sent = time.time()
    created = api.expect(201, "POST", sessions(agent), {"message": message})
    answered = time.time()
    session_id, turn_id = created["sessionId"], created["turnId"]
    stream = api.stream(f"{sessions(agent)}/{session_id}/stream?startIndex=0")
    opened = time.time()
    try:
        seen = stream.until(lambda r: r.type == "turn.completed" and r.turn_id == turn_id, timeout)
        if settle:
            seen += stream.until(lambda r: r.type == "session.waiting")
    finally:
        stream.close()
    started = next(r for r in seen if r.type == "turn.started" and r.turn_id == turn_id)
    completed = next(r for r in seen if r.type == "turn.completed" and r.turn_id == turn_id)
    timing = TurnTiming(
        total=completed.at_client - sent,
        post=answered - sent,
        open=opened - answered,
        to_started=started.at_server - sent,
        run=completed.at_server - started.at_server,
        deliver=completed.at_client - completed.at_server,
        sent=sent,
    )
    return timing, session_id


def breakdown_rows(label: str, timings: list[TurnTiming]) -> list[Row]:
    """Medians of each part of a turn: the profile-free answer to "where does the time go"."""
    parts = [
        ("POST -> 201", "post"),
        ("stream GET -> headers", "open"),
        ("POST -> turn.started recorded", "to_started"),
        ("turn.started -> turn.completed recorded", "run"),
        ("turn.completed recorded -> read", "deliver"),
    ]
    return [
        Row(f"{label}: {name} p50", statistics.median(ms(getattr(t, key)) for t in timings), "ms")
        for name, key in parts
    ]


class Follower(threading.Thread):
    """Reads one session's stream for the whole benchmark, noting when each turn's end was read."""

    def __init__(self, stream: Stream) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.ended: dict[str, Received] = {}
        self.waiting = 0  # session.waiting events read so far
        self.error: BaseException | None = None
        self.changed = threading.Condition()

    def run(self) -> None:
        try:
            for received in self.stream:
                with self.changed:
                    if received.type in ("turn.completed", "turn.failed") and received.turn_id:
                        self.ended[received.turn_id] = received
                    elif received.type == "session.waiting":
                        self.waiting += 1
                    self.changed.notify_all()
        except Exception as error:  # noqa: BLE001 - the socket closed at the end, or a real failure: kept
            self.error = error
        finally:
            with self.changed:
                self.changed.notify_all()

    def wait(self, ready: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: ready() or not self.is_alive(), timeout):
                raise BenchError(f"follow-up: no {what} within {timeout} s")
            if not ready():
                raise BenchError(f"follow-up: the stream ended before {what}: {self.error!r}")


class FollowUps:
    """One session and its stream, held open from the first turn on: ``next()`` posts a
    follow-up (admission enqueue) and times it to its ``turn.completed`` read there.

    Use as a context manager; the first turn has ended when ``__enter__`` returns.
    """

    def __init__(self, stack: Stack, agent: str = AGENT) -> None:
        self.stack = stack
        self.path = sessions(agent)
        self.agent = agent
        self.turns = 0
        self.api = stack.api()
        self.session_id = ""
        self.follower: Follower | None = None

    def __enter__(self) -> FollowUps:
        try:
            created = self.api.expect(201, "POST", self.path, {"message": "hello"})
            self.session_id = created["sessionId"]
            follower = self.follower = Follower(self.api.stream(f"{self.path}/{self.session_id}/stream?startIndex=0"))
            follower.start()
            follower.wait(lambda: created["turnId"] in follower.ended and follower.waiting >= 1, "end of turn 1")
        except BaseException:
            self.__exit__()
            raise
        self.turns = 1
        return self

    def next(self) -> float:
        """One more turn on the session: milliseconds from sending its POST to reading its
        ``turn.completed``; then (untimed) until the session is waiting again, so each
        follow-up meets an idle session."""
        follower = self.follower
        assert follower is not None, "FollowUps is used as a context manager"
        turn = self.turns + 1
        sent = time.time()
        body = {"message": "hello", "admission": "enqueue"}
        turn_id = self.api.expect(202, "POST", f"{self.path}/{self.session_id}", body)["turnId"]
        follower.wait(lambda: turn_id in follower.ended, f"end of turn {turn}")
        ended = follower.ended[turn_id]
        if ended.type != "turn.completed":
            raise BenchError(f"follow-up turn {turn}: {ended.event}")
        follower.wait(lambda: follower.waiting >= turn, f"session.waiting after turn {turn}")
        self.turns = turn
        return ms(ended.at_client - sent)

    def __exit__(self, *exc: object) -> None:
        if self.follower is not None:
            self.follower.stream.close()
        self.api.close()
        if self.follower is not None:
            self.follower.join(timeout=5)
        if self.session_id:
            self.stack.left_idle(self.session_id, self.agent)
