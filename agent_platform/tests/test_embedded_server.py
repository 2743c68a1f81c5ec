"""The README's first command, end to end: from an empty var/ folder, migrate and
``agent serve`` with nothing in the environment, then call the running server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@pytest.fixture(scope="module")
def embedded_server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("embedded-var")
    env = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    env["PLATFORM_VAR_DIR"] = str(tmp_path)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True, timeout=120
    )
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "manage.py", "agent", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if get_json(f"{base}/healthz")[0] == 200:
                break
        except OSError:
            time.sleep(0.2)
    yield base, tmp_path
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)
    log.close()


def test_the_embedded_form_serves_every_example_agent_from_a_clean_state(embedded_server):
    base, var = embedded_server
    for slug in ["support", "triage", "weather"]:
        status, body = get_json(f"{base}/{slug}/v1/health")
        assert (status, body["ok"], body["agent"], body["diagnostics"]) == (200, True, slug, [])
    assert (var / "db.sqlite3").exists()
    output = (var / "serve.log").read_text()
    assert "embedded Celery worker" in output
    assert "Traceback" not in output


def test_the_embedded_form_admits_the_local_developer_without_a_token(embedded_server):
    base, _ = embedded_server
    assert get_json(f"{base}/api/v1/me") == (200, {"tenant": "local", "principal": "dev", "tokenPrefix": None})


def post_json(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_embedded_form_runs_turns_on_its_own_worker_threads(embedded_server):
    base, _ = embedded_server
    status, started = post_json(f"{base}/weather/v1/session", {"message": '/call get_weather {"city": "Oslo"}'})
    assert status == 201, started
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _, dump = get_json(f"{base}/weather/v1/session/{started['sessionId']}/events")
        types = [event["type"] for event in dump["events"]]
        if "session.waiting" in types:
            break
        time.sleep(0.1)
    assert types[-2:] == ["turn.completed", "session.waiting"], types
    assert "action.result" in types


def test_agent_serve_writes_an_access_line_per_request_with_its_request_id(embedded_server):
    base, var = embedded_server
    request = urllib.request.Request(f"{base}/weather/v1/health", headers={"X-Request-ID": "req-serve-1"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.headers["X-Request-ID"] == "req-serve-1"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{base}/no-such-agent/v1/health", timeout=5)
    with refused.value:
        made_up = refused.value.headers["X-Request-ID"]
        assert refused.value.code == 404 and len(made_up) == 32
    deadline = time.monotonic() + 5
    while True:  # the server's console is a file it writes as it goes
        lines = (var / "serve.log").read_text().splitlines()
        ids = ("req-serve-1", made_up)
        mine = [line for line in lines if "agent_platform.access" in line and any(i in line for i in ids)]
        if len(mine) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert mine[0].split(" INFO ")[1].startswith("agent_platform.access [req-serve-1]: GET /weather/v1/health 200 ")
    assert f"[{made_up}]: GET /no-such-agent/v1/health 404 " in mine[1]
    assert mine[0].endswith("ms")
