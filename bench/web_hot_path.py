"""What one turn costs the web process and Postgres, the way the peer benchmark's client does it.

    .venv/bin/python bench/web_hot_path.py [--n 200] [--warm-up 20] [--json OUT] [--compare OLD.json]
                                           [--py-spy OUT.txt] [--show-sql]

Starts the distributed form on a fresh database (daphne, one Celery worker serving every
queue, with no pool flags as compose starts its workers, on queues of its own, Redis at
127.0.0.1:6379, an agent ``fixed`` with the ``test`` model), then runs N times, one after
another:

- create+turn: ``POST /fixed/v1/session {"message": "hello"}`` (201), then the NDJSON
  stream from index 0 until that turn's ``turn.completed``;
- follow-up: ``POST /fixed/v1/session/:id {"message": "hello"}`` (202), then the
  stream from the next index until that turn's ``turn.completed``.

It prints the p50 of each, the CPU each server spent per turn (``/proc/<pid>/stat`` of
daphne, of the worker, and of the Postgres backends connected to the bench database),
and, from a second, shorter pass, the SQL statements daphne sent per request (daphne
serves ``bench.sql_counting_asgi``, which counts them). ``--show-sql`` prints the
statements of one create, stream and follow-up; ``--py-spy OUT`` samples daphne during
the timed pass and ``--py-spy-worker OUT`` the worker (``py-spy record --gil --format
raw``; py-spy must be on PATH or in the virtualenv, it is not a dependency); ``--profile
OUT`` runs every daphne thread under cProfile on its own CPU clock and writes the
statistics to OUT (figures of that run are inflated by the profiler). ``--pin`` puts
daphne and the worker on CPU 0 and the client on CPU 1, as the peer benchmark does
(Postgres too with ``--scratch-postgres``; the shared one is not pinned).
``--scratch-postgres`` starts a Postgres of the run's own (``/usr/lib/postgresql/15``, as user
postgres) with pg_stat_statements: then the statements every process sent are counted
too ("Postgres statements/turn"; ``--show-sql`` lists them per turn).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    PYTHON,
    Api,
    BenchError,
    Processes,
    Stream,
    base_env,
    cpu_seconds,
    free_port,
    manage,
    wait_healthy,
)

AGENT = "fixed"
REDIS_URL = "redis://127.0.0.1:6379"
MESSAGE = "hello"


PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _admin(pg_port: int) -> str:
    return f"host=127.0.0.1 port={pg_port} user=postgres dbname=postgres"


def _scratch_postgres(processes: Processes, work: Path, pin: bool) -> int:
    """A Postgres of this run's own (its port), with pg_stat_statements loaded: its
    backends are the run's alone, and it can say which statements they ran."""
    work.chmod(0o755)  # the postgres user must reach its data folder
    data = work / "pgdata"
    data.mkdir()
    shutil.chown(data, "postgres", "postgres")
    as_postgres = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
    subprocess.run(
        [*as_postgres, str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"],
        check=True,
        capture_output=True,
    )
    port = free_port()
    on_cpu0 = ["taskset", "-c", "0"] if pin else []
    argv = [*on_cpu0, *as_postgres, str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port), "-k", str(data)]
    argv += ["-c", "listen_addresses=127.0.0.1", "-c", "shared_preload_libraries=pg_stat_statements"]
    processes.start("postgres", argv, {"PATH": os.environ.get("PATH", "")})
    for _ in range(100):
        if subprocess.run([str(PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-q"]).returncode == 0:
            return port
        time.sleep(0.2)
    raise BenchError("the scratch Postgres did not start")


def _create_database(pg_port: int, name: str) -> None:
    import psycopg

    with psycopg.connect(_admin(pg_port), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _drop_database(pg_port: int, name: str) -> None:
    import psycopg

    with psycopg.connect(_admin(pg_port), autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _agents_dir(work: Path) -> Path:
    folder = work / "agents" / AGENT / "agent"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text('from agents.sdk import define_agent\n\nagent = define_agent(model="test")\n')
    (folder / "instructions.md").write_text("Answer briefly.\n")
    return folder.parent.parent


def _start(
    processes: Processes, work: Path, pg_port: int, database: str, pin: bool, profile: bool
) -> tuple[int, str, Any, Any]:
    queue = f"web-hot-{uuid.uuid4().hex[:8]}"  # no other worker on this Redis takes our turns
    env = base_env()
    env.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{pg_port}/{database}",
        REDIS_URL=REDIS_URL,
        SECRET_KEY="bench-only-not-secret",  # noqa: S106 - a throwaway key for a throwaway database
        PLATFORM_DEV="0",
        PLATFORM_TASK_QUEUE=queue,
        PLATFORM_VAR_DIR=str(work / "var"),
        AGENTS_DIR=str(_agents_dir(work)),
        LOG_LEVEL="WARNING",
        ALLOWED_HOSTS="127.0.0.1,localhost",
    )
    _create_database(pg_port, database)
    manage(["migrate", "--noinput"], env, timeout=300)
    manage(["tenant", "create", "bench-web"], env)
    token = manage(["token", "create", "bench-web", "bench"], env).strip().splitlines()[-1].strip()
    port = free_port()
    # As the peer benchmark does: the servers share CPU 0 (this script moves to CPU 1).
    on_cpu0 = ["taskset", "-c", "0"] if pin else []
    daphne = [*on_cpu0, PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    daphne.append("bench.sql_counting_asgi:application")
    web = processes.start("daphne", daphne, {**env, "BENCH_PROFILE": "1"} if profile else env)
    # As compose and the peer benchmark start it: pool and concurrency from settings, every
    # queue of the prefix (PLATFORM_TASK_QUEUE) served.
    worker = [*on_cpu0, PYTHON, "-m", "celery", "-A", "agent_platform", "worker", "--loglevel=WARNING"]
    celery = processes.start("celery", worker, env)
    wait_healthy(port, web)
    return port, token, web, celery


class Client:
    """The peer benchmark's ``AP`` client, on the stdlib connection of ``harness.Api``."""

    def __init__(self, port: int, token: str) -> None:
        self.api = Api(port, token)
        self.base = f"/{AGENT}/v1/session"

    def create(self) -> tuple[str, str]:
        body = self.api.expect(201, "POST", self.base, {"message": MESSAGE})
        return body["sessionId"], body["turnId"]

    def follow_up(self, session_id: str) -> str:
        return str(self.api.expect(202, "POST", f"{self.base}/{session_id}", {"message": MESSAGE})["turnId"])

    def stream(self, session_id: str, start: int) -> Stream:
        return self.api.stream(f"{self.base}/{session_id}/stream?startIndex={start}")

    def until_completed(self, session_id: str, start: int, turn_id: str, settle: bool = False) -> int:
        """Read the stream from ``start`` until the turn completes (and, with ``settle``,
        until the session waits again); returns the next index to read."""
        stream = self.stream(session_id, start)
        try:
            seen = stream.until(lambda r: r.turn_id == turn_id and r.type == "turn.completed")
            if settle:
                seen += stream.until(lambda r: r.type == "session.waiting")
        finally:
            stream.close()
        return int(seen[-1].event["index"]) + 1

    def sql(self) -> dict[str, Any]:
        return self.api.expect(200, "GET", "/__bench__/sql")  # type: ignore[no-any-return]

    def close(self) -> None:
        self.api.close()


def _backends(pg_port: int, database: str) -> dict[int, float]:
    """CPU seconds so far of each Postgres backend connected to the bench database."""
    import psycopg

    with psycopg.connect(_admin(pg_port), autocommit=True) as conn:
        pids = [row[0] for row in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [database])]
    found = {}
    for pid in pids:
        try:
            found[pid] = cpu_seconds(pid)
        except OSError:
            continue  # it ended meanwhile
    return found


def _statements(pg_port: int, database: str, reset: bool = False) -> list[tuple[int, float, str]] | None:
    """(calls, total ms, query) of each statement the bench database ran, from
    pg_stat_statements (the scratch Postgres); None where it is not loaded."""
    import psycopg

    with psycopg.connect(_admin(pg_port).replace("dbname=postgres", f"dbname={database}"), autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            if reset:
                conn.execute("SELECT pg_stat_statements_reset()")
                return []
            rows = conn.execute(
                "SELECT calls, total_exec_time, query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
                "WHERE d.datname = current_database() AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC"
            ).fetchall()
        except psycopg.Error:
            return None
    return [(int(calls), float(ms), str(query)) for calls, ms, query in rows]


def _p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed_pass(client: Client, n: int, pids: dict[str, int], pg_port: int, database: str) -> dict[str, float]:
    create, follow = [], []
    statements = _statements(pg_port, database, reset=True)
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    pg_before = _backends(pg_port, database)
    for _ in range(n):
        sent = time.perf_counter()
        session_id, turn_id = client.create()
        index = client.until_completed(session_id, 0, turn_id)
        done = time.perf_counter()
        turn_id = client.follow_up(session_id)
        client.until_completed(session_id, index, turn_id)
        create.append(done - sent)
        follow.append(time.perf_counter() - done)
    after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    pg_after = _backends(pg_port, database)
    turns = 2 * n
    statements = _statements(pg_port, database)
    cpu = {name: (after[name] - before[name]) * 1000 / turns for name in pids}
    cpu["postgres"] = sum(seconds - pg_before.get(pid, 0.0) for pid, seconds in pg_after.items()) * 1000 / turns
    return {
        "create+turn p50 ms": _p50(create),
        "follow-up p50 ms": _p50(follow),
        "daphne CPU ms/turn": cpu["daphne"],
        "worker CPU ms/turn": cpu["worker"],
        "postgres CPU ms/turn": cpu["postgres"],
        "total CPU ms/turn": cpu["daphne"] + cpu["worker"] + cpu["postgres"],
        **({"Postgres statements/turn": sum(row[0] for row in statements) / turns} if statements is not None else {}),
    }


def floor_pass(client: Client, n: int, daphne: int) -> dict[str, float]:
    """Plain requests, for scale: ``GET /healthz`` (Django, one ``SELECT 1``) and
    ``GET /fixed/v1/health`` (DRF, the agent looked up, no token needed)."""
    found = {}
    for label, path in (("GET /healthz", "/healthz"), ("GET /v1/health", f"/{AGENT}/v1/health")):
        samples = []
        before = cpu_seconds(daphne)
        for _ in range(n):
            sent = time.perf_counter()
            client.api.expect(200, "GET", path)
            samples.append(time.perf_counter() - sent)
        found[f"{label} daphne CPU ms"] = (cpu_seconds(daphne) - before) * 1000 / n
        found[f"{label} p50 ms"] = _p50(samples)
    return found


def sql_pass(client: Client, n: int, daphne: int, show: bool) -> dict[str, float]:
    """Statements daphne sent for each request, and its CPU for each; each phase waits
    until the session is settled, so a statement lands in the phase that caused it. (The
    CPU of a phase includes one ``GET /__bench__/sql``, a bare ASGI answer.)"""
    names = ("create", "create stream", "follow-up", "follow-up stream")
    counts: dict[str, list[int]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    shown: dict[str, list[str]] = {}
    mark = (0, 0.0)

    def start() -> None:
        nonlocal mark
        mark = (client.sql()["count"], cpu_seconds(daphne))

    def phase(name: str) -> None:
        time.sleep(0.05)  # the stream's close (and its last read) after the client hung up
        sql = client.sql()
        counts[name].append(sql["count"] - mark[0])
        cpu[name].append(cpu_seconds(daphne) - mark[1])
        shown.setdefault(name, sql["recent"])

    for _ in range(n):
        start()
        session_id, turn_id = client.create()
        phase("create")
        start()
        index = client.until_completed(session_id, 0, turn_id, settle=True)
        phase("create stream")
        start()
        turn_id = client.follow_up(session_id)
        phase("follow-up")
        start()
        client.until_completed(session_id, index, turn_id, settle=True)
        phase("follow-up stream")
    if show:
        for name, statements in shown.items():
            print(f"\n-- {name}: {len(statements)} statements")
            for statement in statements:
                print(f"   {statement[:220]}")
    found = {f"SQL per {name}": statistics.mean(values) for name, values in counts.items()}
    found.update({f"daphne CPU ms, {name}": statistics.mean(values) * 1000 for name, values in cpu.items()})
    return found


def _print_statements(statements: list[tuple[int, float, str]] | None, turns: int) -> None:
    if not statements:
        return
    print(f"\n-- Postgres, per turn ({turns} turns): calls, ms, statement")
    for calls, total, query in statements[:40]:
        print(f"   {calls / turns:6.2f} {total / turns:7.3f}  {' '.join(query.split())[:170]}")


def _py_spy(pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    exe = shutil.which("py-spy") or str(Path(PYTHON).with_name("py-spy"))
    if not Path(exe).exists():
        print("py-spy not found; not profiling", file=sys.stderr)
        return None
    argv = [exe, "record", "--gil", "--rate", "250", "--format", "raw", "--nonblocking", "--pid", str(pid)]
    return subprocess.Popen([*argv, "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="create+turn and follow-up pairs timed")
    parser.add_argument("--warm-up", type=int, default=20)
    parser.add_argument("--sql-n", type=int, default=30, help="pairs of the statement-counting pass")
    parser.add_argument("--json", type=Path, help="save the results here")
    parser.add_argument("--compare", type=Path, help="an earlier --json to print beside")
    parser.add_argument("--py-spy", type=Path, help="sample daphne during the timed pass into this file")
    parser.add_argument("--py-spy-worker", type=Path, help="sample the worker during the timed pass into this file")
    parser.add_argument(
        "--profile", type=Path, help="cProfile every daphne thread on its CPU clock, write the stats here (CPU slows)"
    )
    parser.add_argument("--show-sql", action="store_true")
    parser.add_argument("--pin", action="store_true", help="daphne and the worker on CPU 0, this client on CPU 1")
    parser.add_argument(
        "--scratch-postgres",
        action="store_true",
        help="a Postgres of its own with pg_stat_statements (counts every statement, web and worker)",
    )
    args = parser.parse_args()
    if args.pin:
        os.sched_setaffinity(0, {1})

    work = Path(tempfile.mkdtemp(prefix="web-hot-"))
    processes = Processes(work)
    database = f"ap_web_hot_{os.getpid()}"
    results: dict[str, float] = {}
    pg_port = 5432
    try:
        if args.scratch_postgres:
            pg_port = _scratch_postgres(processes, work, args.pin)
        port, token, web, worker = _start(processes, work, pg_port, database, args.pin, args.profile is not None)
        client = Client(port, token)
        try:
            for _ in range(args.warm_up):
                session_id, turn_id = client.create()
                index = client.until_completed(session_id, 0, turn_id)
                client.until_completed(session_id, index, client.follow_up(session_id))
            spy = _py_spy(web.pid, args.py_spy) if args.py_spy else None
            worker_spy = _py_spy(worker.pid, args.py_spy_worker) if args.py_spy_worker else None
            pids = {"daphne": web.pid, "worker": worker.pid}
            results.update(timed_pass(client, args.n, pids, pg_port, database))
            if args.show_sql:
                _print_statements(_statements(pg_port, database), 2 * args.n)
            for sampler in (spy, worker_spy):
                if sampler is not None:
                    sampler.send_signal(signal.SIGINT)
                    sampler.wait(timeout=30)
            if args.profile is not None:
                client.api.expect(200, "GET", f"/__bench__/profile?{args.profile.resolve()}")
            results.update(floor_pass(client, 300, web.pid))
            results.update(sql_pass(client, args.sql_n, web.pid, args.show_sql))
        finally:
            client.close()
    except BenchError as error:
        print(f"could not measure: {error}", file=sys.stderr)
        for process in processes.running:
            print(f"--- {process.name}:\n{process.log_tail()}", file=sys.stderr)
        return 1
    finally:
        if not args.scratch_postgres:
            with contextlib.suppress(Exception):  # a server left connected: FORCE ends it
                _drop_database(pg_port, database)
        processes.stop_all()
        shutil.rmtree(work, ignore_errors=True)

    old = json.loads(args.compare.read_text()) if args.compare else {}
    print(f"\n{'measure':<30} {'value':>8}" + (f" {'before':>8} {'ratio':>6}" if old else ""))
    for name, value in results.items():
        line = f"{name:<30} {value:>8.2f}"
        if name in old:
            line += f" {old[name]:>8.2f} {value / old[name] if old[name] else float('nan'):>6.2f}"
        print(line)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
