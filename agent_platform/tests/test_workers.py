"""Tasks reach a worker in both forms: worker threads over the in-memory broker
(embedded) and a separate ``celery worker`` process over Redis (distributed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from agent_platform.celery import create_app
from agent_platform.embedded import EmbeddedServices
from agent_platform.tests.daphne import database_url
from sessions_app.models import LogLine

ROOT = Path(__file__).resolve().parents[2]


def make_log_lines(count: int) -> None:
    LogLine.objects.bulk_create(LogLine(level="INFO", logger="t", message=str(n)) for n in range(count))


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.django_db(transaction=True)
def test_the_embedded_worker_threads_run_tasks_sent_through_the_in_memory_broker(settings):
    settings.PLATFORM = {**settings.PLATFORM, "LOG_LINES_KEPT": 100}
    app = create_app("embedded-test")
    app.conf.broker_url = "memory://localhost/"
    app.conf.beat_schedule = {}
    make_log_lines(150)
    services = EmbeddedServices(app, threads=2)
    services.start()
    try:
        app.send_task("sessions_app.tasks.prune_log_lines")
        assert wait_for(lambda: LogLine.objects.count() == 100)
    finally:
        services.stop()
    assert set(LogLine.objects.values_list("message", flat=True)) == {str(n) for n in range(50, 150)}


@pytest.mark.django_db(transaction=True)
def test_the_embedded_beat_fires_the_schedule_into_the_embedded_worker(settings):
    settings.PLATFORM = {**settings.PLATFORM, "LOG_LINES_KEPT": 100}
    app = create_app("embedded-beat-test")
    app.conf.broker_url = "memory://localhost/"
    app.conf.beat_schedule = {"prune": {"task": "sessions_app.tasks.prune_log_lines", "schedule": 1.0}}
    make_log_lines(150)
    services = EmbeddedServices(app, threads=1)
    services.start()
    try:
        assert wait_for(lambda: LogLine.objects.count() == 100), "beat did not fire the task"
    finally:
        services.stop()
    from django_celery_beat.models import PeriodicTask

    assert PeriodicTask.objects.filter(name="prune").exists()  # synced into the database scheduler


@pytest.mark.django_db(transaction=True)
def test_a_celery_worker_process_runs_tasks_sent_through_redis():
    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        pytest.skip("the distributed form needs DATABASE_URL (Postgres) and REDIS_URL")
    make_log_lines(150)
    queue = f"test-{uuid.uuid4().hex[:8]}"  # no other run's messages, no leftovers for the next
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "PLATFORM_LOG_LINES_KEPT": "100",
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "agent_platform",
            "worker",
            "--pool=prefork",
            "--concurrency=1",
            "-O",
            "fair",
            "-Q",
            queue,
            "--without-gossip",
            "--without-mingle",
            "--loglevel=WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        from agent_platform.celery import app

        app.send_task("sessions_app.tasks.prune_log_lines", queue=queue)
        assert wait_for(lambda: LogLine.objects.count() == 100, timeout=60), "the worker did not run the task"
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        output = worker.communicate(timeout=30)[0].decode()
    assert "Traceback" not in output, output
