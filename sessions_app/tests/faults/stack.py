"""The distributed form on loopback for the fault tests (RELIABILITY.md §1, Harness):
daphne, one Celery worker started as users start it (its pool and concurrency from
settings: the threads pool, many turns on one event loop; ``use_worker("prefork")``
for the tests of a pool child) and beat, each a subprocess in its own process group, with
timers shrunk so faults resolve in seconds. Servers are started and stopped through
``bench.harness.Processes``. Like compose's ``restart: unless-stopped``, the stack
starts the worker again when it dies (a crash point, a killed process), unless a test
killed it on purpose with ``kill_worker``.

``Client`` is what a user's program does over HTTP: start, follow up, read the
log, wait for an event with a deadline.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import Api, Process, Processes, free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[3]
PYTHON = sys.executable
# Faults resolve in seconds: a dead worker's lease runs out after 3 s (renewed every
# second), the sweeper looks every 2 s, Redis hands an unacked message out again after
# 15 s, and a turn task is killed after 10 s.
TIMERS = {
    "PLATFORM_TURN_LEASE_SECONDS": "3",
    "PLATFORM_SWEEP_SECONDS": "2",
    "PLATFORM_VISIBILITY_TIMEOUT": "15",
    "PLATFORM_TURN_TIME_LIMIT": "10",
    "PLATFORM_TURN_MAX_ATTEMPTS": "3",
}
LEASE_SECONDS = int(TIMERS["PLATFORM_TURN_LEASE_SECONDS"])
# Long enough for anything that should happen, on a loaded 2-core machine.
DEADLINE = 40.0


def wait_until(condition: Callable[[], Any], timeout: float = DEADLINE, what: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.05)


@dataclass
class Stack:
    """daphne + worker + beat on one database and one Redis."""

    env: dict[str, str]
    work: Path
    processes: Processes
    port: int = 0
    queue: str = ""
    web: Process | None = None
    worker: Process | None = None
    beat: Process | None = None
    crash_dir: Path = field(default_factory=Path)
    clients: list[Client] = field(default_factory=list)
    pool: str = "threads"
    concurrency: int | None = None  # None: from settings (PLATFORM_TURN_CONCURRENCY); prefork: 1
    _supervising: bool = False
    _stopped: threading.Event = field(default_factory=threading.Event)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    @classmethod
    def start(cls, work: Path, database_url: str, redis_url: str, agents_dir: Path, **extra: str) -> Stack:
        work.mkdir(parents=True, exist_ok=True)
        queue = f"fault-{uuid.uuid4().hex[:8]}"  # nobody else's worker takes our tasks
        crash_dir = work / "crash"
        crash_dir.mkdir(exist_ok=True)
        env = {
            **{key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TZ") if key in os.environ},
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "SECRET_KEY": os.environ.get("SECRET_KEY", "fault-tests-only"),
            "DB_CONN_MAX_AGE": "0",
            "PLATFORM_DEV": "0",
            "PLATFORM_TASK_QUEUE": queue,
            "PLATFORM_VAR_DIR": str(work / "var"),
            "PLATFORM_CRASH_POINTS": str(crash_dir),
            "AGENTS_DIR": str(agents_dir),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "LOG_LEVEL": "INFO",
            **TIMERS,
            **extra,
        }
        stack = cls(env, work, Processes(work), free_port(), queue, crash_dir=crash_dir)
        try:
            stack.web = stack.processes.start("daphne", stack._daphne_argv(), env)
            stack.start_worker()
            stack.beat = stack.processes.start("beat", stack._beat_argv(), env)
            wait_healthy(stack.port, stack.web)
            stack.wait_worker_ready()
            stack._supervising = True
            threading.Thread(target=stack._supervise, name="worker-supervisor", daemon=True).start()
        except BaseException:
            stack.stop()
            raise
        return stack

    def _daphne_argv(self) -> list[str]:
        return [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "agent_platform.asgi:application"]

    def _beat_argv(self) -> list[str]:
        # The file scheduler: beat keeps nothing in the (flushed between tests) database.
        schedule = self.work / f"beat-schedule-{uuid.uuid4().hex[:6]}"
        argv = [PYTHON, "-m", "celery", "-A", "agent_platform", "beat", "-S", "celery.beat:PersistentScheduler"]
        return [*argv, "-s", str(schedule), "--loglevel=WARNING"]

    def start_worker(self) -> Process:
        # The pool comes from settings (Celery reads an explicit --pool=prefork as its
        # default and takes the configured pool instead). No -Q: PLATFORM_TASK_QUEUE names
        # every queue the worker serves.
        argv = [PYTHON, "-m", "celery", "-A", "agent_platform", "worker"]
        concurrency = self.concurrency or (1 if self.pool == "prefork" else None)
        if concurrency is not None:
            argv += [f"--concurrency={concurrency}"]
        argv += ["-O", "fair", "-n", f"{self.queue}-{uuid.uuid4().hex[:4]}@%h"]
        argv += ["--without-gossip", "--without-mingle", "--loglevel=INFO"]
        with self._lock:
            self.worker = self.processes.start("worker", argv, {**self.env, "PLATFORM_WORKER_POOL": self.pool})
            return self.worker

    def _supervise(self) -> None:
        """Start the worker again when it has died, as a process supervisor would."""
        while not self._stopped.wait(0.2):
            with self._lock:
                worker = self.worker
                if self._supervising and worker is not None and worker.popen.poll() is not None:
                    self.processes.stop(worker)
                    self.start_worker()

    def wait_worker_ready(self, timeout: float = 60.0) -> None:
        worker = self.worker
        assert worker is not None

        def ready() -> bool:
            if worker.popen.poll() is not None:
                raise AssertionError(f"the worker exited:\n{worker.log_tail()}")
            return " ready." in worker.log_path.read_text(errors="replace")

        wait_until(ready, timeout, "the worker to be ready")

    def pool_children(self) -> list[int]:
        """PIDs of the worker's pool processes (the children of its main process)."""
        assert self.worker is not None
        main = self.worker.pid
        children = Path(f"/proc/{main}/task/{main}/children")
        return [int(pid) for pid in children.read_text().split()] if children.exists() else []

    def kill_worker(self) -> None:
        """SIGKILL the whole worker (main process and pool), as a crashed machine would;
        it stays down until ``restart_worker``."""
        with self._lock:
            self._supervising = False
            assert self.worker is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.worker.pid, signal.SIGKILL)
            self.worker.popen.wait(timeout=10)
            self.processes.stop(self.worker)

    def restart_worker(self) -> None:
        with self._lock:
            if self.worker is not None and self.worker.popen.poll() is None:
                self.processes.stop(self.worker)
            self.start_worker()
            self._supervising = True
        self.wait_worker_ready()

    def use_worker(self, pool: str = "threads", concurrency: int | None = None) -> None:
        """Run the worker with this pool (``threads`` or ``prefork``) and concurrency
        from now on (``None``: the default), restarting it if that changes anything."""
        if (pool, concurrency) != (self.pool, self.concurrency):
            self.pool, self.concurrency = pool, concurrency
            self.restart_worker()

    def ensure_running(self) -> None:
        """Bring back any server a test killed."""
        if self.worker is None or self.worker.popen.poll() is not None:
            self.restart_worker()

    def arm(self, point: str) -> None:
        """Make the next process that reaches crash point ``point`` die there (once)."""
        (self.crash_dir / point).touch()

    def disarm_all(self) -> None:
        for armed in self.crash_dir.iterdir():
            armed.unlink(missing_ok=True)

    def armed(self) -> list[str]:
        return sorted(path.name for path in self.crash_dir.iterdir())

    def client(self, token: str, slug: str = "faults") -> Client:
        """A client; closed by ``close_clients`` (the ``fault`` fixture does it after each test)."""
        client = Client(Api(self.port, token), slug)
        self.clients.append(client)
        return client

    def close_clients(self) -> None:
        for client in self.clients:
            client.api.close()
        self.clients.clear()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            self._supervising = False
            self.processes.stop_all()


class Client:
    """One user's program over HTTP (one keep-alive connection: one per thread)."""

    def __init__(self, api: Api, slug: str) -> None:
        self.api = api
        self.slug = slug

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        if not headers:
            return self.api.call(method, path, body)
        saved = dict(self.api.headers)
        self.api.headers.update(headers)
        try:
            return self.api.call(method, path, body)
        finally:
            self.api.headers = saved

    def start(self, message: str, **body: Any) -> dict[str, Any]:
        status, answer = self.call("POST", f"/{self.slug}/v1/session", {"message": message, **body})
        assert status == 201, (status, answer)
        return dict(answer)

    def follow_up(self, session_id: str, message: str, headers: dict[str, str] | None = None, **body: Any) -> Any:
        return self.call("POST", f"/{self.slug}/v1/session/{session_id}", {"message": message, **body}, headers)

    def events(self, session_id: str) -> list[dict[str, Any]]:
        status, answer = self.call("GET", f"/{self.slug}/v1/session/{session_id}/events")
        assert status == 200, (status, answer)
        return list(answer["events"])

    def approve(self, session_id: str, call_id: str, decision: str = "approve") -> Any:
        return self.call("POST", f"/{self.slug}/v1/session/{session_id}/approvals/{call_id}", {"decision": decision})

    def wait_for(
        self, session_id: str, type: str, count: int = 1, timeout: float = DEADLINE, turn_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The log once it holds ``count`` events of ``type`` (of ``turn_id``, if given)."""

        def enough() -> list[dict[str, Any]] | None:
            events = self.events(session_id)
            found = [e for e in events if e["type"] == type and (turn_id is None or e.get("turnId") == turn_id)]
            return events if len(found) >= count else None

        return list(wait_until(enough, timeout, f"{count}x {type} in {session_id}"))

    def wait_turn_ended(self, session_id: str, turn_id: str, timeout: float = DEADLINE) -> dict[str, Any]:
        """The terminal event of the turn."""

        def ended() -> dict[str, Any] | None:
            for event in self.events(session_id):
                if event.get("turnId") == turn_id and event["type"] in ("turn.completed", "turn.failed"):
                    return event
            return None

        return dict(wait_until(ended, timeout, f"turn {turn_id} to end"))

    def assert_usable(self, session_id: str) -> None:
        """The session takes a follow-up and answers it."""
        status, answer = self.follow_up(session_id, "still there?")
        assert status == 202, (status, answer)
        end = self.wait_turn_ended(session_id, answer["turnId"])
        assert (end["type"], end["data"].get("result")) == ("turn.completed", "echo: still there?"), end


def raw_get(port: int, path: str, token: str, timeout: float = 30.0) -> tuple[int, str, bytes]:
    """One GET on a fresh connection: status, content type, body. (While Postgres is
    down an answer takes DB_POOL_TIMEOUT, 10 s: the wait must be longer.)"""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


def records(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines() if line.strip()]
