"""Many idle NDJSON streams on one daphne process: what they cost while nothing happens.

    .venv/bin/python bench/idle_streams.py [--streams 10000] [--per-session 1] [--idle 20] [--turns 20]
                                           [--heartbeat SECONDS]

Starts the distributed form on loopback (a fresh Postgres database, Redis, one daphne,
one Celery worker), makes ``streams / per-session`` waiting sessions (one real turn,
then copies of that session and its log made in the database), opens the streams with
raw sockets that read the response headers and nothing more, and measures:

- daphne's CPU over ``--idle`` seconds while the streams are open and nothing is appended;
- daphne's RSS before, with the streams open, after they are closed, and after a second
  round of opening and closing them (memory that is reused, not leaked, stays flat);
- the database transactions and Redis pub/sub connections the idle streams cause;
- a follow-up turn on another session, before and while the streams are open.

``--heartbeat S`` opens the streams with ``?heartbeat=1`` and serves them with
``PLATFORM_STREAM_HEARTBEAT_SECONDS=S``: each idle stream then writes a heartbeat line every
S seconds (what every SSE stream does), and the idle CPU includes those writes.

``bench/README.md`` says what each row means. Standard library plus psycopg and redis
(both dependencies); no Django in this process: it measures the server from outside.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from socket import socket

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    PYTHON,
    Api,
    BenchError,
    Process,
    Processes,
    Stream,
    base_env,
    cpu_seconds,
    create_database,
    drop_database,
    free_port,
    manage,
    open_idle_stream,
    rss_kb,
    wait_healthy,
)

AGENT = "weather"
REDIS_URL = "redis://127.0.0.1:6379"
POSTGRES = "host=127.0.0.1 port=5432 user=postgres dbname={name}"
# Seconds for Postgres backends to report their counts (an idle backend reports within 10 s).
STATS_LAG = 11.0
# Copies of one waiting session (and its log) made in the database: thousands of real
# turns would take minutes and measure nothing this benchmark is about.
CLONE_SCRIPT = """
from sessions_app.models import Event, Session
from agent_platform.ids import new_id
template = Session.objects.get(pk={template!r})
events = list(Event.objects.filter(session=template).order_by("index"))
made = []
for start in range(0, {count}, 1000):
    batch = []
    for _ in range(min(1000, {count} - start)):
        copy = Session.objects.get(pk=template.pk)
        copy.pk, copy.continuation_token = new_id("ses"), None
        batch.append(copy)
    Session.objects.bulk_create(batch)
    Event.objects.bulk_create([
        Event(session=s, index=e.index, type=e.type, turn_id=e.turn_id, at=e.at, data=e.data)
        for s in batch
        for e in events
    ])
    made += [s.pk for s in batch]
print("\\n".join(made))
"""


@dataclass
class Row:
    measure: str
    value: float | str
    unit: str = ""
    target: str = ""
    met: bool | None = None


def raise_open_files_limit(needed: int) -> int:
    """This process's soft RLIMIT_NOFILE raised to its hard limit; BenchError if that is short."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise BenchError(f"{needed} open files needed, the hard limit is {hard} (raise it: ulimit -Hn)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def open_files_limit(pid: int) -> str:
    """The soft limit of open files of another process, from /proc/<pid>/limits."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return line.split()[3]
    return "?"


@dataclass
class Stack:
    port: int
    token: str
    web: Process
    env: dict[str, str]
    database: str


def start(processes: Processes, work: Path, database: str, heartbeat: float | None = None) -> Stack:
    """A fresh database, migrated; a tenant and token; one daphne and one Celery worker."""
    queue = f"bench-idle-{uuid.uuid4().hex[:8]}"  # no other worker on this Redis takes our turns
    env = {
        **base_env(),
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}",
        "REDIS_URL": REDIS_URL,
        "SECRET_KEY": "bench-only-not-secret",
        "PLATFORM_DEV": "0",
        "PLATFORM_TASK_QUEUE": queue,
        "PLATFORM_VAR_DIR": str(work / "var"),
        "AGENTS_DIR": str(Path(__file__).resolve().parents[1] / "examples"),
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    if heartbeat is not None:
        env["PLATFORM_STREAM_HEARTBEAT_SECONDS"] = str(heartbeat)
    create_database(database)
    manage(["migrate", "--noinput"], env, timeout=300)
    manage(["tenant", "create", "bench-idle"], env)
    token = manage(["token", "create", "bench-idle", "bench"], env).strip().splitlines()[-1].strip()
    port = free_port()
    daphne = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"]
    web = processes.start("daphne", daphne, env)
    # As users start it (pool and concurrency from the settings); PLATFORM_TASK_QUEUE names its queues.
    worker = [PYTHON, "-m", "celery", "-A", "agent_platform", "worker"]
    worker += ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=WARNING"]
    processes.start("celery", worker, env)
    wait_healthy(port, web)
    return Stack(port, token, web, env, database)


def path_of(session_id: str) -> str:
    return f"/{AGENT}/v1/session/{session_id}"


def waiting_session(api: Api) -> str:
    """A new session whose first turn is over and which waits for a follow-up."""
    created = api.expect(201, "POST", f"/{AGENT}/v1/session", {"message": "hello"})
    stream = api.stream(f"{path_of(created['sessionId'])}/stream?startIndex=0")
    try:
        stream.until(lambda r: r.type == "session.waiting")
    finally:
        stream.close()
    return str(created["sessionId"])


def idle_sessions(stack: Stack, api: Api, count: int) -> list[str]:
    template = waiting_session(api)
    if count == 1:
        return [template]
    made = manage(["shell", "-c", CLONE_SCRIPT.format(template=template, count=count - 1)], stack.env, timeout=600)
    return [template, *(line for line in made.split() if line.startswith("ses_"))]


def follow_up_latencies(api: Api, session_id: str, stream: Stream, turns: int) -> list[float]:
    """``turns`` follow-ups on one session: POST sent to its ``turn.completed`` read on
    ``stream`` (held open since the session began), in milliseconds."""
    samples = []
    for _ in range(turns):
        sent = time.time()
        accepted = api.expect(202, "POST", path_of(session_id), {"message": "hello", "admission": "enqueue"})
        turn_id = accepted["turnId"]
        completed = stream.until(lambda r: r.type == "turn.completed" and r.turn_id == turn_id)[-1]  # noqa: B023
        samples.append((completed.at_client - sent) * 1000)
        stream.until(lambda r: r.type == "session.waiting")  # untimed: the next one meets an idle session
    return samples


def open_streams(stack: Stack, paths: list[str], threads: int = 8) -> tuple[list[socket], float]:
    """One raw socket per path, headers read; all of them or BenchError."""
    opened: list[socket] = []
    lock = threading.Lock()

    def open_one(path: str) -> None:
        sock = open_idle_stream(stack.port, stack.token, path)
        with lock:
            opened.append(sock)

    began = time.time()
    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(open_one, paths))
    except BaseException:
        close_all(opened)
        raise
    return opened, time.time() - began


def close_all(sockets: list[socket]) -> None:
    for sock in sockets:
        sock.close()
    sockets.clear()


def database_counters(database: str) -> tuple[int, int]:
    """(transactions, reads of the event table) of the bench database so far. Postgres
    backends report these at most once a second, and an idle one within 10 s."""
    import psycopg

    with psycopg.connect(POSTGRES.format(name=database), autocommit=True) as conn:
        transactions = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", [database]
        ).fetchone()
        reads = conn.execute(
            "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = %s",
            ["sessions_app_event"],
        ).fetchone()
    return (int(transactions[0]) if transactions else 0), (int(reads[0]) if reads else 0)


def socket_ports(pid: int) -> set[int]:
    """Local TCP ports of a process's sockets (from /proc: its fds' inodes in /proc/net/tcp)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def redis_pubsub_of(pid: int) -> tuple[int, int]:
    """(pub/sub connections, channels they subscribe to) that process holds on Redis."""
    import redis

    ports = socket_ports(pid)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        mine = [c for c in client.client_list(_type="pubsub") if int(c["addr"].rsplit(":", 1)[1]) in ports]
    finally:
        client.close()
    return len(mine), sum(int(c.get("sub", 0)) + int(c.get("psub", 0)) for c in mine)


def thread_cpu_seconds(pid: int, tid: int) -> float:
    """User + system CPU time one thread of a process has used so far."""
    fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_percent(pid: int, seconds: float) -> tuple[float, float]:
    """% of one core the whole process, and its main thread (daphne's event loop), used."""
    before, loop_before, began = cpu_seconds(pid), thread_cpu_seconds(pid, pid), time.time()
    time.sleep(seconds)
    took = time.time() - began
    return 100 * (cpu_seconds(pid) - before) / took, 100 * (thread_cpu_seconds(pid, pid) - loop_before) / took


def settle(pid: int, seconds: float) -> int:
    """RSS after ``seconds`` (the server finishes what opening or closing started)."""
    time.sleep(seconds)
    return rss_kb(pid)


def measure(stack: Stack, args: argparse.Namespace, say: Callable[[str], None]) -> list[Row]:
    api = Api(stack.port, stack.token)
    try:
        say("a bystander session, and its follow-up latency before the streams")
        bystander = waiting_session(api)
        held = api.stream(f"{path_of(bystander)}/stream?startIndex=0")
        held.until(lambda r: r.type == "session.waiting")
        follow_up_latencies(api, bystander, held, 3)  # warm-up
        latency_before = follow_up_latencies(api, bystander, held, args.turns)

        sessions = -(-args.streams // args.per_session)
        say(f"{sessions} waiting sessions")
        ids = idle_sessions(stack, api, sessions)
        query = "?startIndex=0&heartbeat=1" if args.heartbeat is not None else "?startIndex=0"
        paths = [f"{path_of(ids[n % sessions])}/stream{query}" for n in range(args.streams)]

        time.sleep(2)
        rss_before = rss_kb(stack.web.pid)
        say(f"opening {len(paths)} streams")
        opened, took = open_streams(stack, paths)
        try:
            rss_with = settle(stack.web.pid, args.settle)
            say(f"{len(opened)} streams open; {args.idle:g} s idle")
            time.sleep(STATS_LAG)  # what the database did while the streams opened is counted by now
            counted = database_counters(stack.database)
            cpu, loop_cpu = cpu_percent(stack.web.pid, args.idle)
            transactions, reads = (b - a for a, b in zip(counted, database_counters(stack.database), strict=True))
            pubsub, channels = redis_pubsub_of(stack.web.pid)
            say("follow-up latency with the streams open")
            latency_with = follow_up_latencies(api, bystander, held, args.turns)
        finally:
            close_all(opened)
        rss_after = settle(stack.web.pid, args.settle)
        say("follow-up latency after closing them")
        latency_after = follow_up_latencies(api, bystander, held, args.turns)
        say("a second round of the same streams")
        opened, _ = open_streams(stack, paths)
        close_all(opened)
        rss_again = settle(stack.web.pid, args.settle)
        held.close()
    finally:
        api.close()

    growth = (rss_with - rss_before) / 1024
    p50_with, p50_without = statistics.median(latency_with), statistics.median(latency_before + latency_after)
    p95_with = sorted(latency_with)[int(0.95 * (len(latency_with) - 1))]
    return [
        Row("idle streams held open", f"{len(paths):,}", "streams"),
        Row("  over sessions", f"{sessions:,}", "sessions"),
        Row("  time to open them all", f"{took:.1f}", "s"),
        Row("daphne open-files limit", open_files_limit(stack.web.pid)),
        Row(f"daphne CPU while idle ({args.idle:g} s)", f"{cpu:.1f}", "% core", "< 5", cpu < 5),
        Row("  of which its event loop's thread", f"{loop_cpu:.1f}", "% core"),
        Row("database transactions while idle", f"{transactions / args.idle:.1f}", "per s"),
        Row("event table reads while idle", f"{reads / args.idle:.1f}", "per s"),
        Row("daphne Redis pub/sub connections", pubsub, ""),
        Row("  channels they subscribe to", channels, ""),
        Row("daphne RSS before the streams", f"{rss_before / 1024:.0f}", "MB"),
        Row("daphne RSS with the streams", f"{rss_with / 1024:.0f}", "MB"),
        Row("  growth", f"{growth:.0f}", "MB", "< 200", growth < 200),
        Row("  per stream", f"{(rss_with - rss_before) / len(paths):.1f}", "KB"),
        Row(f"daphne RSS {args.settle:g} s after closing them", f"{rss_after / 1024:.0f}", "MB"),
        Row("  after a second round open/close", f"{rss_again / 1024:.0f}", "MB"),
        Row("bystander follow-up p50, before the streams", f"{statistics.median(latency_before):.1f}", "ms"),
        Row("bystander follow-up p50, streams open", f"{p50_with:.1f}", "ms"),
        Row("bystander follow-up p50, after closing them", f"{statistics.median(latency_after):.1f}", "ms"),
        Row("  open / without", f"{p50_with / p50_without:.2f}", "", "≤ 1.3", p50_with / p50_without <= 1.3),
        Row("bystander follow-up p95, streams open", f"{p95_with:.1f}", "ms"),
    ]


def print_table(rows: list[Row]) -> None:
    width = max(len(row.measure) for row in rows)
    print(f"{'measure':<{width}}  {'value':>9}  {'unit':<8}  {'target':<7}  result")
    print(f"{'-' * width}  {'-' * 9}  {'-' * 8}  {'-' * 7}  ------")
    for row in rows:
        result = {True: "met", False: "MISSED", None: ""}[row.met]
        print(f"{row.measure:<{width}}  {row.value!s:>9}  {row.unit:<8}  {row.target:<7}  {result}".rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=10_000, help="idle streams to open (default 10,000)")
    parser.add_argument("--per-session", type=int, default=1, help="streams on each session (default 1)")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds of idle CPU measured (default 20)")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds let pass before each RSS (default 8)")
    parser.add_argument("--turns", type=int, default=20, help="bystander follow-ups timed each time (default 20)")
    parser.add_argument(
        "--heartbeat", type=float, default=None, help="streams ask for heartbeats, sent every this many seconds"
    )
    args = parser.parse_args()
    limit = raise_open_files_limit(args.streams + 256)
    load = os.getloadavg()
    print(f"load average before the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    print(f"open-files limit of this process: {limit}")
    database = f"agent_platform_idle_{os.getpid()}"
    began = time.time()

    def say(what: str) -> None:
        print(f"  {time.time() - began:6.1f} s  {what}", flush=True)

    with tempfile.TemporaryDirectory(prefix="agent-platform-idle-") as tmp:
        processes = Processes(Path(tmp))
        try:
            say(f"starting daphne and a worker on database {database}")
            stack = start(processes, Path(tmp), database, args.heartbeat)
            rows = measure(stack, args, say)
        except (BenchError, OSError, KeyboardInterrupt) as error:
            print(f"\nbench stopped: {error!r}", file=sys.stderr)
            for process in processes.running:
                print(f"--- last lines of {process.name}.log ---\n{process.log_tail(20)}", file=sys.stderr)
            return 1
        finally:
            processes.stop_all()
            drop_database(database)
    load = os.getloadavg()
    print(f"\nload average after the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
