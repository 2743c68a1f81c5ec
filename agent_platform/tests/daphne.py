"""A daphne process serving the platform on the test database, for tests that need a
real server: raw sockets (body limits) or a real browser (browser_tests)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Daphne:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url() -> str:
    """The test database's URL, for the servers a test starts (its password kept, if any)."""
    from django.db import connection

    db = connection.settings_dict
    user = f"{db['USER']}:{db['PASSWORD']}" if db.get("PASSWORD") else db["USER"]
    return f"postgres://{user}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def serve(tmp_path_factory: Any, env: dict[str, str], ready_path: str = "/healthz") -> Iterator[Daphne]:
    """Start daphne with ``env`` on top of this process's environment and the test
    database, wait until ``ready_path`` answers 200, yield it, and stop it."""
    port = free_port()
    full_env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "PLATFORM_VAR_DIR": str(tmp_path_factory.mktemp("daphne-var")),
        **env,
    }
    log = (tmp_path_factory.mktemp("daphne-log") / "daphne.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"],
        cwd=ROOT,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Daphne(process, port)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(server.url + ready_path, timeout=2):
                break
        except (OSError, urllib.error.HTTPError):
            if process.poll() is not None or time.monotonic() > deadline:
                log.close()
                raise RuntimeError("daphne did not start: " + Path(log.name).read_text()[-3000:]) from None
            time.sleep(0.2)
    yield server
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    log.close()


def serve_live(
    tmp_path_factory: Any, worker: Any, agents_dir: Any, ready_path: str, **extra_env: str
) -> Iterator[Daphne]:
    """``serve`` as the live tests want it: ``agents_dir`` (the live AGENTS_DIR), dev mode
    off (every caller needs a token), turns sent to the live worker's queue."""
    env = {
        "AGENTS_DIR": str(agents_dir),
        "PLATFORM_DEV": "0",
        "PLATFORM_TASK_QUEUE": worker.queue,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        **extra_env,
    }
    yield from serve(tmp_path_factory, env, ready_path)
