"""What the servers spend, read from outside (psutil and ``pg_stat_activity``), for ``bench/run.py``.

- ``tree_cpu_seconds`` / ``tree_rss_bytes``: a server with all its child processes
  (a prefork Celery worker is a parent and its pool children);
- ``PostgresConnections``: the connections a process tree holds to one database;
- ``BackendCpu``: CPU of the Postgres backends serving one database, between two moments
  (Postgres on this machine: it reads the postmaster's children in ``/proc``);
- ``ServerCpu``: both servers and the database's backends around one block of turns;
- ``Sampler``: a callable run every ~100 ms on a thread, its largest value kept.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg
from harness import POSTGRES_ADMIN, BenchError

POSTGRES_PORT = 5432
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[psutil.Process]:
    """The process and every descendant alive now."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU the process tree has used so far, exited children included.

    Each process counts its own time and that of its children it has reaped (Linux adds a
    child's times to its parent's ``cutime``/``cstime`` when the parent waits for it), so a
    pool child replaced between two readings stays in the difference of the two.
    """
    total = 0.0
    for process in process_tree(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def tree_rss_bytes(pid: int) -> int:
    """Resident set size summed over the process tree (pages shared by a parent and its
    forked children are counted in each)."""
    total = 0
    for process in process_tree(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += process.memory_info().rss
    return total


def _postgres_ports(pid: int) -> set[int]:
    """Local ports of the tree's established TCP connections to the Postgres port."""
    ports = set()
    for process in process_tree(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            for conn in process.net_connections(kind="tcp"):
                if conn.raddr and conn.raddr.port == POSTGRES_PORT and conn.status == psutil.CONN_ESTABLISHED:
                    ports.add(conn.laddr.port)
    return ports


class PostgresConnections:
    """How many ``pg_stat_activity`` rows of ``database`` are connections of a process tree:
    rows whose client port is the local port of one of the tree's sockets to Postgres.
    One admin connection (to the ``postgres`` database, so it is never counted) per meter."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.conn = psycopg.connect(POSTGRES_ADMIN, autocommit=True)

    def count(self, pid: int) -> int:
        ports = _postgres_ports(pid)
        rows = self.conn.execute(
            "SELECT client_port FROM pg_stat_activity WHERE datname = %s AND client_port IS NOT NULL",
            [self.database],
        ).fetchall()
        return sum(1 for (port,) in rows if port in ports)

    def close(self) -> None:
        self.conn.close()


def _schedstat_seconds(pid: int) -> float:
    """Time on CPU of a single-threaded process, in nanoseconds from /proc/<pid>/schedstat
    (``/proc/<pid>/stat`` rounds to clock ticks of 10 ms: as much as a short-lived
    Postgres backend uses in all)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def _reaped_children_seconds(pid: int) -> float:
    """``cutime + cstime`` of a process: the CPU of its children it has reaped, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / CLOCK_TICKS  # fields 16 and 17 of proc(5)


def _children(pid: int) -> set[int]:
    try:
        return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN: the slow way
        return {child.pid for child in psutil.Process(pid).children()}


@dataclass
class _Backend:
    ours: bool | None  # serves the database (None: its process title does not say yet)
    first: float = 0.0  # CPU seconds when first seen (0 for one forked during the measurement)
    last: float = 0.0  # CPU seconds when last seen


class BackendCpu:
    """CPU seconds the Postgres backends serving ``database`` use between ``start()`` and ``stop()``.

    A backend is a process the postmaster forks for one connection; the servers' pools
    open and close connections, and a worker without a pool opens one per task, so
    backends come and go. A thread polls the postmaster's children every ``interval``:
    each child's process title names its database (``postgres: main: USER DATABASE
    HOST(PORT) ...``), and each one of ours is read from ``/proc/<pid>/schedstat``
    (nanoseconds). A backend alive at ``start()`` counts from its reading then, one
    forked later from zero. When backends exit, the postmaster reaps them and adds their
    whole CPU time to its ``cutime``/``cstime``: if every child that left between two
    polls was one of ours, that increase is exactly what they used (``exact_exits``);
    if others left too (other databases on the same server), ours count to their last
    reading (``approximate_exits``). A child forked and gone within one interval is never
    seen; the increase it causes is ``unattributed`` (whatever its database).
    """

    def __init__(self, database: str, interval: float = 0.02) -> None:
        self.title = re.compile(rf"\s{re.escape(database)}\s")
        self.interval = interval
        self.postmaster = 0
        self.backends: dict[int, _Backend] = {}
        self.reaped = 0.0  # the postmaster's cutime + cstime at the last poll
        self.exited = 0.0  # CPU seconds of our backends that exited
        self.opened = 0  # our backends forked since start()
        self.exact_exits = 0
        self.approximate_exits = 0
        self.unattributed = 0.0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._poll_until_stopped, daemon=True)

    def _snapshot(self) -> tuple[float, set[int]]:
        """The postmaster's reaped-children CPU and its children, read so the two agree:
        no child reaped between the readings (else read again)."""
        for _ in range(10):
            before = _reaped_children_seconds(self.postmaster)
            children = _children(self.postmaster)
            if _reaped_children_seconds(self.postmaster) == before:
                break
        return before, children

    def _classify(self, pid: int) -> bool | None:
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return None
        if self.title.search(title):
            return True
        # A backend forked moments ago may not have set its title yet (it still shows the
        # postmaster's command line); any other title is another database or a helper process.
        return False if title.startswith("postgres: ") else None

    def _poll(self, initial: bool = False) -> None:
        reaped, children = self._snapshot()
        gone = self.backends.keys() - children
        for pid in children - self.backends.keys():
            self.backends[pid] = _Backend(ours=None)
        for pid, backend in self.backends.items():
            if pid in gone:
                continue
            if backend.ours is None:
                backend.ours = self._classify(pid)
                self.opened += bool(backend.ours and not initial)
            if backend.ours:
                try:
                    cpu = _schedstat_seconds(pid)
                except OSError:  # exited since the snapshot: accounted for at the next poll
                    continue
                if initial:
                    backend.first = cpu
                backend.last = cpu
        increase = reaped - self.reaped
        self.reaped = reaped
        left = [self.backends.pop(pid) for pid in gone]
        ours = [backend for backend in left if backend.ours]
        if not left:
            self.unattributed += increase
        elif len(ours) == len(left):
            self.exited += increase - sum(backend.first for backend in ours)
            self.exact_exits += len(ours)
        else:
            self.exited += sum(backend.last - backend.first for backend in ours)
            self.approximate_exits += len(ours)

    def _poll_until_stopped(self) -> None:
        while not self.stopping.wait(self.interval):
            self._poll()

    def start(self) -> None:
        try:
            # The postmaster is the parent of this connection's backend (read while it lives).
            with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
                row = conn.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                postmaster = psutil.Process(psutil.Process(row[0]).ppid())
            if "postgres" not in postmaster.name():
                raise psutil.NoSuchProcess(postmaster.pid)
        except psutil.NoSuchProcess:
            raise BenchError("Postgres runs on another machine or in a container of its own: no CPU figures") from None
        self.postmaster = postmaster.pid
        self.reaped = _reaped_children_seconds(self.postmaster)
        self._poll(initial=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)
        self._poll()

    @property
    def seconds(self) -> float:
        alive = sum(backend.last - backend.first for backend in self.backends.values() if backend.ours)
        return alive + self.exited


@dataclass
class CpuSpent:
    """CPU seconds spent; the last three say how well the Postgres figure is known (``BackendCpu``)."""

    web: float
    worker: float
    postgres: float
    postgres_opened: int  # backends of the database forked meanwhile: connections opened
    postgres_approximate: int  # backends whose exit was counted to their last reading
    postgres_unattributed: float  # CPU of postmaster children too short-lived to see, any database

    @property
    def total(self) -> float:
        return self.web + self.worker + self.postgres


class ServerCpu:
    """CPU seconds of the web server's and the worker's process trees and of the database's
    Postgres backends, spent inside the ``with`` block; ``spent`` is set when it ends."""

    def __init__(self, web_pid: int, worker_pid: int, database: str) -> None:
        self.web_pid = web_pid
        self.worker_pid = worker_pid
        self.backends = BackendCpu(database)
        self.spent: CpuSpent | None = None

    def __enter__(self) -> ServerCpu:
        self.backends.start()
        self.before = tree_cpu_seconds(self.web_pid), tree_cpu_seconds(self.worker_pid)
        return self

    def __exit__(self, *exc: object) -> None:
        web, worker = tree_cpu_seconds(self.web_pid), tree_cpu_seconds(self.worker_pid)
        self.backends.stop()
        self.spent = CpuSpent(
            web=web - self.before[0],
            worker=worker - self.before[1],
            postgres=self.backends.seconds,
            postgres_opened=self.backends.opened,
            postgres_approximate=self.backends.approximate_exits,
            postgres_unattributed=self.backends.unattributed,
        )


class Sampler(threading.Thread):
    """Calls ``read`` every ``interval`` seconds until ``stop()``; keeps the largest value."""

    def __init__(self, read: Callable[[], float], interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.read = read
        self.interval = interval
        self.peak = read()
        self.samples = 1
        self.error: BaseException | None = None
        self.stopping = threading.Event()

    def run(self) -> None:
        next_at = time.monotonic()
        while not self.stopping.is_set():
            try:
                self.peak = max(self.peak, self.read())
            except Exception as error:  # noqa: BLE001 - reported by the caller after stop()
                self.error = error
                return
            self.samples += 1
            next_at += self.interval
            self.stopping.wait(max(0.0, next_at - time.monotonic()))

    def stop(self) -> float:
        """Stop, take one last sample, and return the peak."""
        self.stopping.set()
        self.join(timeout=10)
        if self.error is not None:
            raise self.error
        self.peak = max(self.peak, self.read())
        return self.peak
