"""Fixtures of the fault suite (RELIABILITY.md §1 rows 1-9).

``stack`` is the distributed form on the test database and the shared Redis (its
own task queue), started once for this package. Every fault test runs with
``fault``: before it, no crash point is armed; after it, once no turn is left
queued or running, ``assert_log_invariants`` checks every session it made.
"""

from __future__ import annotations

import os
import time

import pytest
from django.db import connection

from agent_platform.tests.daphne import database_url
from agent_platform.tests.factories import issue_token
from sessions_app.models import Turn, TurnStatus
from sessions_app.tests.faults.invariants import assert_log_invariants
from sessions_app.tests.faults.stack import DEADLINE, Stack
from sessions_app.tests.live import wait_settled


@pytest.fixture(scope="session")
def test_database_url(django_db_setup) -> str:
    """The URL of the test database (created by pytest-django), for the servers we start."""
    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        pytest.skip("the fault suite needs DATABASE_URL (Postgres) and REDIS_URL")
    return database_url()


# Package scope: the stack's beat sweeps the test database, so it must be gone before
# the rest of the suite runs (it would hand their queued turns to its own worker).
@pytest.fixture(scope="package")
def stack(test_database_url, live_agents_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("fault-stack")
    # A schedule's fire more than 10 s late is a missed one (test_schedule_beats).
    started = Stack.start(
        work, test_database_url, os.environ["REDIS_URL"], live_agents_dir, PLATFORM_SCHEDULE_GRACE_SECONDS="10"
    )
    yield started
    started.stop()


@pytest.fixture
def fault(stack, transactional_db, settings, live_agents_dir):
    """The stack, clean before the test and checked after it. Tasks this process sends
    (a request made in-process, a re-published task) go to the stack's worker."""
    from agent_platform.celery import app

    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    previous, app.conf.task_default_queue = app.conf.task_default_queue, stack.queue
    stack.ensure_running()
    stack.disarm_all()
    yield stack
    app.conf.task_default_queue = previous
    stack.close_clients()
    armed = stack.armed()
    stack.disarm_all()
    stack.ensure_running()
    wait_settled(DEADLINE)
    assert_log_invariants()
    assert not armed, f"crash points armed but never reached: {armed}"


@pytest.fixture
def token(alice) -> str:
    return issue_token(alice)


@pytest.fixture
def one_running_turn_per_session(fault):
    """Samples the turns table every few milliseconds during the test; fails it if a
    session ever had two running turns."""
    import threading

    from django.db import connections
    from django.db.models import Count

    seen: list[dict] = []
    stop = threading.Event()

    def sample() -> None:
        try:
            while not stop.is_set():
                running = Turn.objects.filter(status=TurnStatus.RUNNING).values("session_id")
                seen.extend(running.annotate(n=Count("id")).filter(n__gt=1))
                time.sleep(0.01)
        finally:
            connections.close_all()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    yield
    stop.set()
    sampler.join(timeout=10)
    assert not seen, f"sessions with two running turns at once: {seen[:5]}"
