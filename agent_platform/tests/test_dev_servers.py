"""The development servers as a developer starts them, in the embedded form (nothing in
the environment but a fresh var/ folder): ``agent serve`` says "Listening" only once it
listens and exits non-zero when it cannot; ``manage.py runserver`` runs the turns it
accepts (its own worker threads); neither fills the console with beat's sweeper."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def embedded_env(tmp_path_factory) -> dict[str, str]:
    """The embedded form's environment over a migrated, empty var/ folder; beat's sweeper
    due every second, so a few seconds of serving would show its lines."""
    var = tmp_path_factory.mktemp("dev-var")
    env = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    env.update(PLATFORM_VAR_DIR=str(var), PLATFORM_SWEEP_SECONDS="1", AGENT_DEFAULT_MODEL="test")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    return env


class Server:
    """A server process with its output in a file."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._file = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", *argv],
            cwd=ROOT,
            env=env,
            stdout=self._file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log.read_text()

    def wait_for_output(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        self._file.close()


@pytest.fixture
def start(embedded_env, tmp_path) -> Iterator:
    servers: list[Server] = []

    def make(*argv: str) -> Server:
        server = Server(list(argv), embedded_env, tmp_path / f"server-{len(servers)}.log")
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def request(url: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    call = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(call, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def listens(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_agent_serve_says_listening_once_it_listens(start):
    port = free_port()
    server = start("agent", "serve", "--port", str(port))
    server.wait_for_output("Listening on")
    assert listens(port)  # the line came after the bind, never before
    assert f"Listening on http://127.0.0.1:{port}/" in server.output()


def test_agent_serve_exits_non_zero_when_its_port_is_taken(start):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = start("agent", "serve", "--port", str(port))
        assert server.process.wait(timeout=60) == 1
    output = server.output()
    assert f"not serving: Couldn't listen on 127.0.0.1:{port}" in output and "Address already in use" in output
    assert "Listening on" not in output


def test_runserver_runs_the_turns_it_accepts_and_the_sweeper_stays_off_the_console(start):
    port = free_port()
    server = start("runserver", "--noreload", f"127.0.0.1:{port}")
    server.wait_for_output("Listening on TCP address")
    base = f"http://127.0.0.1:{port}"
    status, started = request(f"{base}/weather/v1/session", {"message": '/call get_weather {"city": "Oslo"}'})
    assert status == 201, started
    deadline = time.monotonic() + 30
    while True:
        types = [
            event["type"] for event in request(f"{base}/weather/v1/session/{started['sessionId']}/events")[1]["events"]
        ]
        if "turn.completed" in types or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert "turn.completed" in types, types
    time.sleep(2.5)  # the sweeper (due every second) has run a few times by now
    output = server.output()
    assert "embedded Celery worker" in output and "sessions_app.tasks.run_turn" in output
    assert "sweep_turns" not in output and "Sending due task" not in output, output
