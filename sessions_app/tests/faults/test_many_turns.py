"""Many turns in one worker process (DESIGN.md §9.1): a worker killed while fifty turns
run in it, stop and preempt while fifty turns share it, ``max_running_turns`` under a
burst, and the worker's database connections during a burst of two hundred.

The stack's worker is started as users start it (``celery -A agent_platform worker``:
the threads pool, ``PLATFORM_TURN_CONCURRENCY`` turns on one event loop)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from sessions_app.models import Turn, TurnStatus
from sessions_app.tests.faults.stack import DEADLINE, Stack, wait_until
from sessions_app.tests.faults.tools import call_ids, ledger

pytestmark = [pytest.mark.fault, pytest.mark.slow]


def start_many(fault: Stack, token: str, messages: list[str], slug: str = "faults") -> list[dict[str, Any]]:
    """One session per message, started at once from a few client threads."""

    def start(message: str) -> dict[str, Any]:
        return fault.client(token, slug).start(message)

    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(start, messages))


def turn_statuses(turn_ids: list[str]) -> dict[str, str]:
    return dict(Turn.objects.filter(pk__in=turn_ids).values_list("pk", "status"))


def wait_all_ended(turn_ids: list[str], timeout: float = DEADLINE * 2) -> dict[str, str]:
    ended = {TurnStatus.COMPLETED, TurnStatus.FAILED}

    def done() -> dict[str, str] | None:
        statuses = turn_statuses(turn_ids)
        return statuses if all(status in ended for status in statuses.values()) else None

    return dict(wait_until(done, timeout, f"{len(turn_ids)} turns to end"))


def worker_connections(fault: Stack) -> int:
    """Postgres connections the worker process holds (its application name)."""
    assert fault.worker is not None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            [f"agent-platform celery {fault.worker.pid}"],
        )
        (count,) = cursor.fetchone()
    return int(count)


def test_a_worker_killed_while_fifty_turns_run_in_it_loses_none_and_runs_none_twice(fault, token):
    started = start_many(fault, token, [f'/call effect {{"key": "k{n}", "hold": 4}}' for n in range(50)])
    turns = [s["turnId"] for s in started]
    # Fifty calls running at once, all in the one worker process.
    runs = wait_until(lambda: len(ledger()["run"]) >= 50 or None, what="fifty calls to run at once")
    assert runs
    fault.kill_worker()
    fault.restart_worker()

    statuses = wait_all_ended(turns)

    assert set(statuses.values()) == {TurnStatus.COMPLETED}
    found = ledger()
    for session in started:
        events = fault.client(token).events(session["sessionId"])
        [call] = call_ids(events).values()
        assert found["effect"][call] == 1  # the effect was made once
        assert [e["type"] for e in events].count("turn.completed") == 1
    assert set(Turn.objects.filter(pk__in=turns).values_list("attempts", flat=True)) == {2}


def test_stop_and_preempt_reach_their_turns_while_fifty_share_a_worker(fault, token):
    started = start_many(fault, token, ["/sleep 30"] * 50)
    wait_until(
        lambda: (
            Turn.objects.filter(pk__in=[s["turnId"] for s in started], status=TurnStatus.RUNNING).count() == 50 or None
        ),
        what="fifty turns running",
    )
    client = fault.client(token)
    stopped, preempted = started[:25], started[25:]
    for session in stopped:
        status, _ = client.call("POST", f"/faults/v1/session/{session['sessionId']}/stop")
        assert status == 202
    follow_ups = {}
    for session in preempted:
        status, answer = client.follow_up(session["sessionId"], "after")
        assert status == 202, answer
        follow_ups[session["sessionId"]] = answer["turnId"]

    for session in started:
        end = client.wait_turn_ended(session["sessionId"], session["turnId"], timeout=20)
        assert (end["type"], end["data"]["message"]) == ("turn.failed", "turn interrupted")
    for session_id, turn_id in follow_ups.items():
        end = client.wait_turn_ended(session_id, turn_id)
        assert (end["type"], end["data"]["result"]) == ("turn.completed", "echo: after")


@contextmanager
def sampled(read: Callable[[], int], every: float) -> Iterator[list[int]]:
    """``read()`` every ``every`` seconds in a thread of its own while inside."""
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        from django.db import connections

        try:
            while not done.is_set():
                samples.append(read())
                time.sleep(every)
        finally:
            connections.close_all()

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        yield samples
    finally:
        done.set()
        sampler.join()


def test_max_running_turns_holds_under_a_burst(fault, token):
    """The ``capped`` agent runs one turn at a time across all its sessions."""
    capped_running = Turn.objects.filter(session__agent__slug="capped", status=TurnStatus.RUNNING)
    with sampled(capped_running.count, every=0.005) as running_at_once:
        started = start_many(fault, token, ["/sleep 0.2\nok"] * 12, slug="capped")
        statuses = wait_all_ended([s["turnId"] for s in started], timeout=90)

    assert set(statuses.values()) == {TurnStatus.COMPLETED}
    assert max(running_at_once) == 1


def test_the_workers_database_connections_stay_bounded_during_a_burst_of_two_hundred(fault, token):
    with sampled(lambda: worker_connections(fault), every=0.05) as samples:
        started = start_many(fault, token, ["/sleep 1\nok"] * 200)
        statuses = wait_all_ended([s["turnId"] for s in started], timeout=120)

    assert set(statuses.values()) == {TurnStatus.COMPLETED}
    assert max(samples) > 0  # the sampler saw the worker's connections at all
    assert max(samples) <= 20, f"the worker held up to {max(samples)} connections"
