"""The floor under a turn: what the parts of this stack cost with none of the platform in them.

    .venv/bin/python bench/floor.py [--n 500] [--tasks 1000] [--json OUT]

A turn as the peer benchmark's client makes it is two HTTP requests to daphne (the POST
that records the turn, the stream that reads it back), one Celery task in the worker, and
a few durable writes. This measures each of those below the platform, on the same pinning
as ``web_hot_path.py --pin`` (servers on CPU 0, this client on CPU 1), so that the
platform's CPU per turn can be read against them:

- one request to daphne serving a bare ASGI callable, Django with no middleware, Django
  with the platform's middleware, that as a DRF view, Django inserting and committing
  one row, and Django reading one row by its key: the server's CPU per request
  (``/proc``) and the p50 as a client sees it;
- one Celery task that does nothing (``bench/floor_celery.py``, the platform's Celery
  settings): the publisher's CPU per ``apply_async`` and the worker's CPU per task;
- Postgres's CPU per committed insert and per read (its backends' CPU during those passes);
- one Redis command as the platform sends them (redis-py: a doorbell's ``PUBLISH``, the
  open-streams count's ``EVALSHA`` and ``ZREM``): the client's CPU and redis-server's.

Sums them into the floor of a turn of the peer benchmark (two requests to DRF views
through the middleware, one of them committing, a publish, a task, three more commits in the worker:
the claim, the turn's events, its end), a lower bound that leaves out every read; then
adds what every follow-up turn must read and say through Redis whatever the code
(``READS_PER_TURN``, ``REDIS_COMMANDS_PER_TURN``): the floor a turn of any platform on
Django, Celery and a durable log stands on. Redis at 127.0.0.1:6379, Postgres at
127.0.0.1:5432 (user postgres).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # the platform, for floor_celery

from harness import (
    PYTHON,
    Api,
    BenchError,
    Processes,
    base_env,
    cpu_seconds,
    create_database,
    drop_database,
    free_port,
    wait_healthy,
)
from meters import BackendCpu

REDIS_URL = "redis://127.0.0.1:6379/0"
APPS = ("raw", "django", "django-middleware", "drf", "django-commit", "django-read")
PATHS = {"drf": "/drf", "django-commit": "/commit", "django-read": "/read"}
# What one follow-up turn must read, whatever the implementation: each request finds its
# session (the POST, the stream); the POST admits the turn under the tenant's caps (its
# tenant row locked, then its running turns counted); the stream reads the log; the
# worker reads the conversation so far and, settling the session, locks its row.
READS_PER_TURN = 7
# And what it must say through Redis: the stream takes its place in the tenant's
# open-streams count and gives it back, and the worker rings the session's doorbell.
REDIS_COMMANDS_PER_TURN = 3


def _env(database: str, queue: str) -> dict[str, str]:
    env = base_env()
    env.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{database}",
        REDIS_URL=REDIS_URL,
        SECRET_KEY="bench-only-not-secret",  # noqa: S106 - a throwaway key for a throwaway database
        PLATFORM_DEV="0",
        PLATFORM_TASK_QUEUE=queue,
        LOG_LEVEL="WARNING",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        PYTHONPATH=str(Path(__file__).resolve().parent.parent),
    )
    return env


def _requests(processes: Processes, env: dict[str, str], app: str, n: int, database: str) -> dict[str, float]:
    port = free_port()
    daphne_argv = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "bench.floor_asgi:application"]
    argv = ["taskset", "-c", "0", *daphne_argv]
    daphne = processes.start(f"daphne-{app}", argv, {**env, "FLOOR_APP": app})
    path = PATHS.get(app, "/bare")
    try:
        wait_healthy(port, daphne, path="/bare")  # every application answers it, to GET too
        api = Api(port, None)
        for _ in range(100):
            api.call("POST", path, {"m": "hello"})
        backends = BackendCpu(database) if app in ("django-commit", "django-read") else None
        if backends is not None:
            backends.start()
        latencies = []
        before = cpu_seconds(daphne.pid)
        for _ in range(n):
            started = time.perf_counter()
            status, _ = api.call("POST", path, {"m": "hello"})
            latencies.append(time.perf_counter() - started)
            if status != 200:
                raise BenchError(f"{app}: {status}")
        spent = cpu_seconds(daphne.pid) - before
        found = {
            f"{app}: request p50 ms": statistics.median(latencies) * 1000,
            f"{app}: daphne CPU ms/request": spent * 1000 / n,
        }
        if backends is not None:
            backends.stop()
            found[f"Postgres CPU ms/{'commit' if app == 'django-commit' else 'read'}"] = backends.seconds * 1000 / n
        api.close()
        return found
    finally:
        processes.stop(daphne)


def _tasks(processes: Processes, env: dict[str, str], count: int) -> dict[str, float]:
    import redis

    os.environ.update({key: env[key] for key in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "PLATFORM_TASK_QUEUE")})
    from bench.floor_celery import DONE_KEY, noop

    counter = redis.Redis.from_url(REDIS_URL)
    counter.delete(DONE_KEY)
    argv = ["taskset", "-c", "0", PYTHON, "-m", "celery", "-A", "bench.floor_celery", "worker", "--loglevel=WARNING"]
    worker = processes.start("floor-worker", argv, env)
    try:
        warm = 100
        for n in range(warm):
            noop.apply_async((n,))
        _wait_count(counter, DONE_KEY, warm, worker)
        before = cpu_seconds(worker.pid)
        published = time.process_time()
        for n in range(count):
            noop.apply_async((n,))
        publish = time.process_time() - published
        _wait_count(counter, DONE_KEY, warm + count, worker)
        time.sleep(0.5)  # the last acks
        spent = cpu_seconds(worker.pid) - before  # the half second idle costs next to nothing
        return {
            "Celery: publish (apply_async) CPU ms": publish * 1000 / count,
            "Celery: worker CPU ms/task (empty task)": spent * 1000 / count,
        }
    finally:
        processes.stop(worker)
        counter.delete(DONE_KEY)


def _redis_server_pid() -> int:
    """The redis-server listening on Redis's port here."""
    import psutil

    for process in psutil.process_iter(["name"]):
        if process.info["name"] == "redis-server":
            with contextlib.suppress(psutil.Error):
                if any(conn.laddr.port == 6379 for conn in process.net_connections(kind="tcp")):
                    return int(process.pid)
    raise BenchError("no redis-server listens on 6379")


def _redis_commands(count: int) -> dict[str, float]:
    """A Redis command as the platform sends them (redis-py, one round trip): this
    process's CPU (redis-py's side, as a server process spends it) and redis-server's,
    for the doorbell's PUBLISH and the open-streams count's EVALSHA and ZREM."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    take = client.register_script("redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) return 1")
    key = f"bench-floor:{uuid.uuid4().hex[:8]}"
    server = _redis_server_pid()
    commands = (
        lambda n: client.publish(f"{key}:bell", n),
        lambda n: take(keys=[key], args=[n, n]),
        lambda n: client.zrem(key, n),
    )
    for command in commands:
        for n in range(100):
            command(n)
    client_before, server_before = time.process_time(), cpu_seconds(server)
    for n in range(count):
        for command in commands:
            command(n)
    spent = len(commands) * count
    found = {
        "Redis: client CPU ms/command": (time.process_time() - client_before) * 1000 / spent,
        "Redis: server CPU ms/command": (cpu_seconds(server) - server_before) * 1000 / spent,
    }
    client.delete(key)
    return found


def _wait_count(counter: Any, key: str, target: int, worker: Any, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while int(counter.get(key) or 0) < target:
        if worker.popen.poll() is not None:
            raise BenchError(f"the floor worker exited:\n{worker.log_tail()}")
        if time.monotonic() > deadline:
            raise BenchError(f"only {counter.get(key)} of {target} tasks done:\n{worker.log_tail()}")
        time.sleep(0.05)


def floor_of_a_turn(found: dict[str, float]) -> float:
    """Two requests to DRF views through the middleware (the POST commits), a publish, a task, three
    commits in the worker (the claim, the turn's events, its end), and Postgres's side of
    the four commits."""
    request = found["drf: daphne CPU ms/request"]
    commit = found["django-commit: daphne CPU ms/request"] - found["django: daphne CPU ms/request"]
    return (
        2 * request
        + 4 * commit
        + found["Celery: publish (apply_async) CPU ms"]
        + found["Celery: worker CPU ms/task (empty task)"]
        + 4 * found["Postgres CPU ms/commit"]
    )


def floor_with_reads(found: dict[str, float]) -> float:
    """``floor_of_a_turn`` and what a turn must read (``READS_PER_TURN`` reads: Django's
    side and Postgres's) and say through Redis (``REDIS_COMMANDS_PER_TURN`` commands:
    both sides): the least a follow-up turn can cost with Django, Celery and durable
    events, whatever the platform's own code does."""
    read = found["django-read: daphne CPU ms/request"] - found["django: daphne CPU ms/request"]
    redis_command = found["Redis: client CPU ms/command"] + found["Redis: server CPU ms/command"]
    return (
        floor_of_a_turn(found)
        + READS_PER_TURN * (read + found["Postgres CPU ms/read"])
        + REDIS_COMMANDS_PER_TURN * redis_command
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=500, help="requests timed per application")
    parser.add_argument("--tasks", type=int, default=1000, help="empty Celery tasks timed")
    parser.add_argument("--json", type=Path, help="save the figures here")
    args = parser.parse_args()
    os.sched_setaffinity(0, {1})
    database = f"bench_floor_{os.getpid()}"
    queue = f"bench-floor-{uuid.uuid4().hex[:8]}"
    create_database(database)
    import psycopg

    with psycopg.connect(f"postgres://postgres@127.0.0.1:5432/{database}", autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_floor_rows (id bigserial PRIMARY KEY, data text)")
        conn.execute("INSERT INTO bench_floor_rows (data) VALUES ('the row django-read reads')")
    env = _env(database, queue)
    found: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        processes = Processes(Path(tmp))
        try:
            for app in APPS:
                found.update(_requests(processes, env, app, args.n, database))
            found.update(_tasks(processes, env, args.tasks))
            found.update(_redis_commands(args.n * 4))
        finally:
            processes.stop_all()
            drop_database(database)
    found["floor of a turn: CPU ms (sum)"] = floor_of_a_turn(found)
    with_reads = f"floor with {READS_PER_TURN} reads, {REDIS_COMMANDS_PER_TURN} Redis commands: CPU ms"
    found[with_reads] = floor_with_reads(found)
    width = max(map(len, found))
    print(f"\n{'measure':<{width}}  value")
    for name, value in found.items():
        print(f"{name:<{width}}  {value:7.2f}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
