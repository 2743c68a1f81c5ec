"""``GET /readyz``: the database, the broker, the channel layer and a worker, for readiness
probes. A Redis of our own (the shared one is never stopped) is killed under a live
daphne + worker + beat and started again: readiness fails, naming what, and recovers."""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from agent_platform.tests.daphne import database_url
from bench.harness import Processes
from sessions_app.tests.faults.servers import OwnRedis
from sessions_app.tests.faults.stack import DEADLINE, Stack, wait_until


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def servers(django_db_setup, django_db_blocker, live_agents_dir, tmp_path_factory) -> Iterator[tuple[Stack, OwnRedis]]:
    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL") or not shutil.which("redis-server"):
        pytest.skip("needs Postgres, REDIS_URL and redis-server")
    work = tmp_path_factory.mktemp("readyz")
    redis = OwnRedis(Processes(work))
    redis.start()
    try:
        stack = Stack.start(work / "stack", database_url(), redis.url, live_agents_dir)
        try:
            yield stack, redis
        finally:
            stack.stop()
    finally:
        redis.processes.stop_all()


@pytest.mark.django_db(transaction=True)
def test_readyz_fails_naming_redis_while_it_is_down_and_recovers(servers):
    stack, redis = servers
    url = f"http://127.0.0.1:{stack.port}/readyz"
    assert get(url) == (
        200,
        {"status": "ok", "checks": {"database": "ok", "broker": "ok", "channel_layer": "ok", "workers": "ok"}},
    )

    redis.kill()
    status, body = get(url)
    assert status == 503
    assert body["status"] == "unavailable"
    assert body["error"] == "not_ready"
    assert body["checks"] == {
        "database": "ok",
        "broker": "unreachable",
        "channel_layer": "unreachable",
        "workers": "unreachable",
    }
    assert get(f"http://127.0.0.1:{stack.port}/healthz")[0] == 200  # liveness is not readiness

    redis.start()
    wait_until(lambda: get(url)[0] == 200, DEADLINE, "readiness after Redis came back")


@pytest.mark.django_db
def test_without_skips_checks_and_an_unknown_name_is_400():
    client = Client()
    only_database = client.get("/readyz?without=workers,broker&without=channel_layer")
    assert only_database.status_code == 200
    assert only_database.json() == {"status": "ok", "checks": {"database": "ok"}}
    unknown = client.get("/readyz?without=sidecar")
    assert unknown.status_code == 400
    assert unknown.json()["error"] == "invalid"
