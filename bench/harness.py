"""What ``bench/run.py`` stands on: the servers it starts and the HTTP client it measures with.

Standard library only (plus psycopg, already a dependency, to create and drop the
bench database), so the client side of a measurement carries no framework cost.

- ``Processes`` starts servers in their own process groups and always stops them;
- ``create_database`` / ``drop_database`` give each run a database of its own;
- ``Api`` is one keep-alive HTTP/1.1 connection (one per thread: http.client is
  not thread-safe); ``Stream`` reads an NDJSON event stream line by line and
  stamps each line with the time it was read.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
POSTGRES_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
# Every wait on a server is bounded: no benchmark waits longer than this for one answer.
TIMEOUT = 30.0


class BenchError(RuntimeError):
    """A benchmark could not measure (a server did not start, a turn failed, a wait timed out)."""


# ---------------------------------------------------------------- processes


def free_port() -> int:
    """A TCP port free on loopback right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it if the bench runner dies without cleaning up
    (killed with SIGKILL), so no server outlives the run (Linux prctl PR_SET_PDEATHSIG)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    log: TextIO

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 30) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class Processes:
    """Servers started by this run; ``stop_all`` ends each one's whole process group."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.running: list[Process] = []

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> Process:
        log_path = self.log_dir / f"{name}.log"
        log = log_path.open("w")
        popen = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Its own process group: Ctrl-C in the terminal reaches only the runner,
            # which then stops the servers in order instead of leaving them half-dead.
            start_new_session=True,
            preexec_fn=_die_with_parent,  # only ever called from the main thread
        )
        process = Process(name, popen, log_path, log)
        self.running.append(process)
        return process

    def stop(self, process: Process, grace: float = 10.0) -> None:
        if process.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.popen.wait(timeout=grace)
        # A group may hold children that outlive the leader; make sure none is left.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.log.close()
        if process in self.running:
            self.running.remove(process)

    def stop_all(self) -> None:
        for process in reversed(list(self.running)):
            self.stop(process)


def manage(args: list[str], env: dict[str, str], timeout: float = 120.0) -> str:
    """``manage.py ARGS`` to completion; its stdout, or BenchError with its output."""
    done = subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc/<pid>/stat."""
    # The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    """Resident set size of a process, from /proc (psutil is not a dependency)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise BenchError(f"no VmRSS for pid {pid}")


# ---------------------------------------------------------------- database


def create_database(name: str) -> None:
    import psycopg

    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(name: str) -> None:
    import psycopg

    # FORCE: a server that was killed may leave a backend behind for a moment.
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_exists(name: str) -> bool:
    import psycopg

    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


# ---------------------------------------------------------------- HTTP client


def parse_at(value: str) -> float:
    """An event's ``at`` (ISO 8601, ``Z``) as epoch seconds, comparable with ``time.time()``."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@dataclass
class Received:
    """One NDJSON line: the event and the client's ``time.time()`` when it was read."""

    at_client: float
    event: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.event["type"])

    @property
    def turn_id(self) -> str | None:
        return self.event.get("turnId")

    @property
    def at_server(self) -> float:
        return parse_at(self.event["at"])


class Stream:
    """An open NDJSON stream; iterate it for ``Received`` lines. Close it when done:
    the server keeps an idle session's stream open forever."""

    def __init__(
        self, conn: http.client.HTTPConnection, sock: socket.socket, response: http.client.HTTPResponse
    ) -> None:
        self.conn = conn
        self.sock = sock
        self.response = response

    def __iter__(self) -> Iterator[Received]:
        while True:
            line = self.response.readline()  # chunk-aware; bounded by the socket timeout
            if not line:
                return
            if line.strip():
                yield Received(time.time(), json.loads(line))

    def until(self, predicate: Any, timeout: float = TIMEOUT) -> list[Received]:
        """Lines read until one matches ``predicate`` (included); BenchError after ``timeout``."""
        deadline = time.time() + timeout
        seen: list[Received] = []
        for received in self:
            seen.append(received)
            if received.type == "turn.failed":
                raise BenchError(f"turn failed: {received.event}")
            if predicate(received):
                return seen
            if time.time() > deadline:
                break
        raise BenchError(f"stream ended or timed out before the awaited event; saw {[r.type for r in seen]}")

    def close(self) -> None:
        # Shut the socket down first: that wakes a thread blocked reading it (it sees the
        # end of the stream). Closing alone would wait for that read's buffer lock, up
        # to the socket timeout, as an idle stream sends nothing.
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.conn.close()


class Api:
    """One keep-alive connection to the server, with the bearer token (if any) on each call."""

    def __init__(self, port: int, token: str | None, timeout: float = TIMEOUT) -> None:
        self.port = port
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.conn = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        conn.connect()
        # Small requests and answers: do not let Nagle hold them back.
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        payload = None if body is None else json.dumps(body)
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=payload, headers=self.headers)
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # The server closed an idle keep-alive connection: reconnect once.
                self.conn.close()
                if attempt == 2:
                    raise
                self.conn = self._connect()
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, raw.decode(errors="replace")

    def expect(self, status: int, method: str, path: str, body: Any = None) -> Any:
        got, answer = self.call(method, path, body)
        if got != status:
            raise BenchError(f"{method} {path}: {got} (wanted {status}): {answer}")
        return answer

    def stream(self, path: str) -> Stream:
        """Open an NDJSON stream on a new connection (a stream never ends on an idle session)."""
        conn = self._connect()
        sock = conn.sock  # kept: http.client may hand it to the response and forget it
        conn.request("GET", path, headers={**self.headers, "Accept": "application/x-ndjson"})
        response = conn.getresponse()
        if response.status != 200:
            body = response.read()
            conn.close()
            raise BenchError(f"GET {path}: {response.status}: {body[:300]!r}")
        return Stream(conn, sock, response)

    def close(self) -> None:
        self.conn.close()


def base_env() -> dict[str, str]:
    """A clean environment: nothing from the caller's shell (AGENTS_DIR, a model, ...) leaks in."""
    return {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TZ") if key in os.environ}


def wait_healthy(port: int, process: Process, timeout: float = 60.0, path: str = "/healthz") -> None:
    """Until ``GET path`` answers 200; BenchError with the server's log if it dies or times out."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.popen.poll() is not None:
            raise BenchError(f"{process.name} exited ({process.popen.returncode}):\n{process.log_tail()}")
        # Closed whatever happens: a server slow to answer (a timeout) left the socket to
        # the garbage collector, whose ResourceWarning failed the test that happened to run.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            with contextlib.suppress(OSError, http.client.HTTPException):
                conn.request("GET", path)
                if conn.getresponse().status == 200:
                    return
        finally:
            conn.close()
        time.sleep(0.1)
    raise BenchError(f"{process.name} not healthy within {timeout} s:\n{process.log_tail()}")


def open_idle_stream(port: int, token: str | None, path: str, timeout: float = TIMEOUT) -> socket.socket:
    """A raw socket with an NDJSON stream's response headers read and nothing more.

    Holding sockets rather than http.client objects keeps the client light, so a
    thousand of them cost the bench runner little; what is measured is the server.
    """
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Accept: application/x-ndjson\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            sock.close()
            raise BenchError(f"GET {path}: connection closed before the headers")
        head += chunk
        if len(head) > 65536:
            break
    status_line = head.split(b"\r\n", 1)[0]
    if b" 200 " not in status_line + b" ":
        sock.close()
        raise BenchError(f"GET {path}: {status_line!r}")
    return sock
