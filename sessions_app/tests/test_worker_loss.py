"""A worker killed mid-turn leaves no session stuck: the turn is taken up again."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from agent_platform.tests.daphne import database_url
from sessions_app.scheduling import sweep_turns
from sessions_app.tests.live import LiveClient, assert_gapless, assert_turns_ended_once, types

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def start_worker(queue: str, agents_dir: Path, var_dir: Path, log: Path | None = None) -> subprocess.Popen:
    """A worker on ``queue``; its output goes to ``log`` (for a failing test to show)."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "PLATFORM_VAR_DIR": str(var_dir),
        "AGENTS_DIR": str(agents_dir),
        "PLATFORM_TURN_LEASE_SECONDS": "3",
        "PLATFORM_TASK_QUEUE": queue,
    }
    # The worker has its own copy of the log's descriptor; ours closes at once.
    with log.open("ab") if log is not None else contextlib.nullcontext(subprocess.DEVNULL) as output:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "agent_platform",
                "worker",
                "--pool=threads",
                "--concurrency=2",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel=WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_a_turn_whose_worker_is_killed_is_taken_up_by_another(live_agents_dir, settings, client_for, alice, tmp_path):
    from agent_platform.celery import app

    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        pytest.skip("needs Postgres and Redis")

    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir, "TURN_LEASE_SECONDS": 3}
    queue, shared_queue = f"kill-{uuid.uuid4().hex[:8]}", app.conf.task_default_queue
    app.conf.task_default_queue = queue
    first = start_worker(queue, live_agents_dir, tmp_path / "var")
    second = None
    try:
        client = LiveClient(client_for(alice), "lab")
        session = client.start('/call wait {"seconds": 3}')["sessionId"]
        client.wait_for(session, "actions.requested")
        os.killpg(first.pid, signal.SIGKILL)  # the whole worker, mid-tool
        first.wait(timeout=10)
        second = start_worker(queue, live_agents_dir, tmp_path / "var")
        time.sleep(3.5)  # the dead worker's lease runs out
        assert sweep_turns() >= 1  # what beat's sweeper does every few seconds
        events = client.wait_for(session, "session.waiting", timeout=40)
        assert client.follow_up(session, "still there?").status_code == 202
        after = client.wait_for(session, "session.waiting", count=2)
    finally:
        app.conf.task_default_queue = shared_queue
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(timeout=10)
    assert types(events).count("turn.started") == 1  # the second attempt resumed from the log
    assert types(events)[-2:] == ["turn.completed", "session.waiting"]
    assert_gapless(events)
    assert_turns_ended_once(events)
    assert after[-2]["data"]["result"] == "echo: still there?"
