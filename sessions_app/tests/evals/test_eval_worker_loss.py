"""An eval run whose worker is killed mid-run does not stay running: the sweep (what
beat's ``sweep-eval-runs`` does) resumes its unfinished cases on another worker."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid

import pytest
from django.db import connection

from sessions_app.evals.runs import sweep_runs
from sessions_app.scheduling import sweep_turns
from sessions_app.tests.test_worker_loss import start_worker

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = "/judge/v1/dev/evals"


def test_a_run_whose_worker_died_is_resumed(live_agents_dir, settings, client_for, alice, tmp_path, monkeypatch):
    from agent_platform.celery import app

    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        pytest.skip("needs Postgres and Redis")
    settings.PLATFORM = {
        **settings.PLATFORM,
        "AGENTS_DIR": live_agents_dir,
        "TURN_LEASE_SECONDS": 3,
        "EVAL_LEASE_SECONDS": 3,
    }
    monkeypatch.setenv("PLATFORM_EVAL_LEASE_SECONDS", "3")  # the workers' too
    queue, shared_queue = f"evalkill-{uuid.uuid4().hex[:8]}", app.conf.task_default_queue
    app.conf.task_default_queue = queue
    logs = [tmp_path / "first-worker.log", tmp_path / "second-worker.log"]
    first = start_worker(queue, live_agents_dir, tmp_path / "var", logs[0])
    second = None
    try:
        client = client_for(alice)
        run = client.post(f"{ROOT}/runs", {"tags": ["parallel"]}, format="json").json()
        deadline = time.monotonic() + 30
        while not client.get("/judge/v1/sessions?purpose=eval").json()["sessions"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)  # the whole worker, mid-run
        first.wait(timeout=10)
        assert client.get(f"{ROOT}/runs/{run['runId']}").json()["status"] == "running"
        second = start_worker(queue, live_agents_dir, tmp_path / "var", logs[1])
        time.sleep(3.5)  # the dead worker's leases run out
        assert sweep_runs() == 1
        sweep_turns()
        deadline = time.monotonic() + 60
        while (snapshot := client.get(f"{ROOT}/runs/{run['runId']}").json())["status"] == "running":
            if time.monotonic() > deadline:
                tails = "\n".join(f"{log.name}:\n{log.read_text(errors='replace')[-3000:]}" for log in logs)
                raise AssertionError(f"the run did not finish: {snapshot['cases']}\n{tails}")
            time.sleep(0.2)
        assert snapshot["status"] == "completed"
        assert snapshot["summary"]["passed"] == 4 and snapshot["summary"]["pending"] == 0
    finally:
        app.conf.task_default_queue = shared_queue
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:  # a warm shutdown waits for the run's task
                    os.killpg(worker.pid, signal.SIGKILL)
                    worker.wait(timeout=10)
