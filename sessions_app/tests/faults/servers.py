"""Throwaway Postgres and Redis servers that the restart tests (rows 4 and 5) may
stop, kill and restart; the shared servers are never touched.

Postgres: a cluster made with ``initdb`` as the ``postgres`` user in a temporary
folder, on a port of its own, loaded with a copy of the test database (so no
migration runs). Redis: ``redis-server`` without persistence, the worst case
for a restart (everything queued in it is lost).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.harness import Process, Processes, free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")
DATABASE = "agent_platform"


def _as_postgres(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    command = argv if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--", *argv]
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=120, **kwargs)  # type: ignore[call-overload]


class OwnPostgres:
    """A Postgres cluster of our own on 127.0.0.1:``port``."""

    def __init__(self) -> None:
        self.port = free_port()
        # Under /tmp, not pytest's 0700 folder: the postgres user must reach it.
        self.folder = Path(tempfile.mkdtemp(prefix="fault-pg-"))
        self.data = self.folder / "data"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        _as_postgres([str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-N"])

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={DATABASE}"

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.folder} "
            # fsync off is safe here (a crash of the server, not of the machine, keeps the
            # OS's page cache); synchronous_commit stays on: a commit is in the WAL when acked.
            "-c fsync=off -c full_page_writes=off"
        )
        self._pg_ctl("-o", options, "-l", str(self.folder / "log"), "-w", "start")

    def stop(self, mode: str = "immediate") -> None:
        """``immediate`` is a crash: no checkpoint, clients cut off mid-transaction."""
        self._pg_ctl("-m", mode, "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def load_copy_of(self, source_url: str) -> None:
        """Create the database as a copy of ``source_url``'s (schema and rows)."""
        self._psql("-c", f"CREATE DATABASE {DATABASE}")
        dump = subprocess.run(
            [str(PG_BIN / "pg_dump"), "--no-owner", "--no-privileges", source_url],
            check=True,
            capture_output=True,
            timeout=120,
        )
        self._psql(DATABASE, input=dump.stdout)

    def remove(self) -> None:
        if self.running():
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _pg_ctl(self, *args: str) -> None:
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), *args])

    def _psql(self, *args: str, input: bytes | None = None) -> None:
        argv = ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-q", "-v", "ON_ERROR_STOP=1"]
        subprocess.run([*argv, *args], input=input, check=True, capture_output=True, timeout=120)


class OwnRedis:
    """A ``redis-server`` of our own on 127.0.0.1:``port``, in ``processes``."""

    def __init__(self, processes: Processes) -> None:
        self.processes = processes
        self.port = free_port()
        self.process: Process | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        argv = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"]
        self.process = self.processes.start("redis", argv, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        deadline = time.monotonic() + 10
        while not self.ping():
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis did not start:\n{self.process.log_tail()}")
            time.sleep(0.05)

    def _cli(self, *args: str) -> str:
        argv = ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), *args]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=10).stdout.strip()

    def ping(self) -> bool:
        return self._cli("ping") == "PONG"

    def kill(self) -> None:
        """SIGKILL: whatever it held is gone (no persistence)."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.popen.wait(timeout=10)
        self.processes.stop(self.process)

    def shutdown_nosave(self) -> None:
        """``SHUTDOWN NOSAVE``: a clean stop that keeps nothing (no persistence)."""
        self._cli("shutdown", "nosave")
        assert self.process is not None
        self.process.popen.wait(timeout=10)
        self.processes.stop(self.process)
