"""Deployments sharing one Redis keep apart by the database their REDIS_URL names: the
broker uses that database and the channel layer (with the doorbell) the next one, unless
CELERY_BROKER_URL / CHANNELS_REDIS_URL say otherwise. Before, every deployment's broker
was database 0, so one deployment's workers took another's turns. Session workspaces
never lie inside a folder agents are imported from: the settings refuse to start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from agent_platform.tests.daphne import database_url

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({
    "broker": settings.CELERY_BROKER_URL,
    "layer": settings.CHANNEL_LAYERS["default"].get("CONFIG", {}).get("hosts"),
    "doorbell": settings.PLATFORM["DOORBELL_REDIS_URL"],
}))
"""


def load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The settings as a deployment with exactly this environment loads them."""
    clean = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    clean.update({"DJANGO_SETTINGS_MODULE": "agent_platform.settings", "SECRET_KEY": "k"})
    clean.setdefault("PLATFORM_VAR_DIR", str(tmp_path / "var"))
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60, check=False
    )


def redis_config(tmp_path: Path, **env: str) -> dict[str, object]:
    result = load_settings(tmp_path, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_database_in_redis_url_is_the_brokers_and_the_next_one_the_channel_layers(tmp_path):
    config = redis_config(tmp_path, REDIS_URL="redis://:pw@redis.internal:6379/5")
    assert config == {
        "broker": "redis://:pw@redis.internal:6379/5",
        "layer": ["redis://:pw@redis.internal:6379/6"],
        "doorbell": "redis://:pw@redis.internal:6379/6",
    }


def test_a_redis_url_naming_no_database_uses_0_and_1(tmp_path):
    config = redis_config(tmp_path, REDIS_URL="redis://redis.internal:6379")
    assert (config["broker"], config["layer"]) == ("redis://redis.internal:6379/0", ["redis://redis.internal:6379/1"])


def test_celery_broker_url_and_channels_redis_url_override_each(tmp_path):
    config = redis_config(
        tmp_path,
        REDIS_URL="redis://redis.internal:6379/5",
        CELERY_BROKER_URL="redis://broker.internal:6380/3",
        CHANNELS_REDIS_URL="rediss://layer.internal:6390/9",
    )
    assert config == {
        "broker": "redis://broker.internal:6380/3",
        "layer": ["rediss://layer.internal:6390/9"],
        "doorbell": "rediss://layer.internal:6390/9",
    }
    only_layer = redis_config(tmp_path, REDIS_URL="redis://r:6379/5", CHANNELS_REDIS_URL="redis://l:6379/2")
    assert (only_layer["broker"], only_layer["layer"]) == ("redis://r:6379/5", ["redis://l:6379/2"])


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"REDIS_URL": "redis://redis.internal:6379/five"}, "use a number"),
        ({"REDIS_URL": "redis://r:6379/5", "CELERY_BROKER_URL": "amqp://rabbit"}, "CELERY_BROKER_URL='amqp://rabbit'"),
        ({"CELERY_BROKER_URL": "redis://b:6379/3"}, "REDIS_URL is not"),
    ],
)
def test_a_bad_redis_setting_stops_start_up_with_a_clear_message(tmp_path, env, message):
    result = load_settings(tmp_path, **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


@pytest.mark.parametrize("layout", ["var_in_agents_dir", "agents_dir_in_workspaces", "var_in_examples"])
def test_workspaces_inside_a_folder_agents_are_imported_from_refuse_to_start(tmp_path, layout):
    agents = tmp_path / "agents"
    env = {
        "var_in_agents_dir": {"AGENTS_DIR": str(agents), "PLATFORM_VAR_DIR": str(agents / "var")},
        "agents_dir_in_workspaces": {
            "AGENTS_DIR": str(tmp_path / "var" / "workspaces"),
            "PLATFORM_VAR_DIR": str(tmp_path / "var"),
        },
        "var_in_examples": {"PLATFORM_VAR_DIR": str(tmp_path / "link" / "var")},
    }[layout]
    if layout == "var_in_examples":
        (tmp_path / "link").symlink_to(ROOT / "examples")  # a symlink does not hide it
    result = load_settings(tmp_path, **env)
    assert result.returncode != 0
    assert "Session workspaces" in result.stderr and "a folder agents are imported from" in result.stderr
    assert not (ROOT / "examples" / "var").exists()


def test_the_default_workspaces_are_outside_agents_dir(tmp_path):
    assert load_settings(tmp_path, PLATFORM_VAR_DIR="").returncode == 0


# --- two deployments on one Redis, with real workers ------------------------------------------------

REDIS = "redis://127.0.0.1:6379"


def queued(client: redis.Redis, prefix: str) -> int:
    """Messages waiting in a deployment's queues (kombu keeps each queue as a list)."""
    return sum(client.llen(key) for key in client.scan_iter(f"{prefix}*") if client.type(key) == b"list")


@pytest.fixture
def deployment_x_worker(tmp_path) -> Iterator[str]:
    """A ``celery worker`` of deployment X: REDIS_URL names database 5. Its queue prefix is
    the same as deployment Y's (both left at one name), as on one shared Redis."""
    from django.db import connection

    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        pytest.skip("two deployments need Postgres and Redis")
    prefix = f"shared-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": f"{REDIS}/5",
        "PLATFORM_VAR_DIR": str(tmp_path / "var-x"),
        "PLATFORM_TASK_QUEUE": prefix,
    }
    command = [sys.executable, "-m", "celery", "-A", "agent_platform", "worker", "--pool=threads"]
    command += ["--concurrency=2", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"]
    with (tmp_path / "worker-x.log").open("w") as log:
        worker = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield prefix
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
            for database in (5, 7):
                client = redis.Redis.from_url(f"{REDIS}/{database}")
                for key in client.scan_iter(f"{prefix}*"):
                    client.delete(key)


SEND_TURN = """
import sys, django
django.setup()
from agent_platform.celery import app
from sessions_app.queues import TaskName, send
send(TaskName.RUN_TURN, sys.argv[1], tenant_id=1)
"""


def enqueue_turn(database: int, prefix: str, tmp_path: Path) -> None:
    """A turn sent as the web process of a deployment whose REDIS_URL names ``database``
    sends it (the turn id names no turn: a worker that takes it only looks it up)."""
    env = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    env.update(
        DJANGO_SETTINGS_MODULE="agent_platform.settings",
        SECRET_KEY="k",
        REDIS_URL=f"{REDIS}/{database}",
        PLATFORM_TASK_QUEUE=prefix,
        PLATFORM_VAR_DIR=str(tmp_path / f"var-{database}"),
    )
    command = [sys.executable, "-c", SEND_TURN, f"turn_{uuid.uuid4().hex}"]
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=60, capture_output=True)


def test_a_worker_of_one_deployment_does_not_take_another_deployments_turn(deployment_x_worker, tmp_path):
    prefix = deployment_x_worker
    x, y = redis.Redis.from_url(f"{REDIS}/5"), redis.Redis.from_url(f"{REDIS}/7")
    enqueue_turn(7, prefix, tmp_path)  # deployment Y
    assert queued(y, prefix) == 1
    enqueue_turn(5, prefix, tmp_path)  # deployment X: its own worker takes this one
    deadline = time.monotonic() + 60
    while queued(x, prefix) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert queued(x, prefix) == 0, "deployment X's worker never took its own turn"
    time.sleep(1)  # it has had every chance to take Y's too
    assert queued(y, prefix) == 1
