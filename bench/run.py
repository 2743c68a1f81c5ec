"""The benchmark suite: starts the platform on loopback, measures it, prints one table.

    .venv/bin/python bench/run.py [--quick] [--json OUT] [--compare OLD.json]
                                  [--worker-args "--pool=threads --concurrency=100"]
                                  [--burst N] [--burst-sleep S] [--long-session N]

The distributed form (a fresh Postgres database, Redis, one daphne, one Celery worker
started as users start it, ``celery -A agent_platform worker`` with its pool and
concurrency from the settings, the ``weather`` example agent and the ``test`` model) is
started by this script and stopped again whatever happens; then the embedded form
(``manage.py agent serve``, SQLite, worker threads in the server) for its turn
overhead. Every figure is taken from outside, over HTTP, the way a client sees it, or
from the servers' processes (psutil, ``/proc``, ``pg_stat_activity``). Targets are those
of issues 7, 11 and 14. ``bench/README.md`` says what each row means.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import slack_events as slack
import tracing
from ab import bench_ab, write_ab_agents
from discovery import generate
from evals import EVAL_AGENT, bench_evals, write_eval_agent
from harness import (
    PYTHON,
    ROOT,
    TIMEOUT,
    Api,
    BenchError,
    Processes,
    base_env,
    create_database,
    database_exists,
    drop_database,
    free_port,
    manage,
    open_idle_stream,
    rss_kb,
    wait_healthy,
)
from mcp_ask import bench_mcp_ask
from meters import tree_cpu_seconds
from quotas import bench_quotas
from rls import bench_rls
from scale import bench_burst, bench_cpu_per_turn, bench_fairness
from schedules import bench_schedule_lag, write_ticker
from table import Row, ms, percentile, print_comparison, print_table
from turns import AGENT, UNCAPPED, FollowUps, Stack, breakdown_rows, sessions, timed_turn

from deploy import bench_deploy

# The `test` model's `/stream N` yields the deltas "t0 ", "t1 ", ...; coalescing
# merges them into fewer message.appended events, so deltas are counted as tokens.
DELTA_TOKEN = re.compile(r"t\d+ ")
STREAM_DELTAS = 10_000
REDIS_URL = "redis://127.0.0.1:6379"


# ---------------------------------------------------------------- sizes


@dataclass
class Sizes:
    """How much each benchmark does; ``--quick`` is a smoke run of the same code."""

    turns: int = 200
    follow_ups: int = 500
    throughput_seconds: float = 10.0
    clients: tuple[int, ...] = (16, 64)
    idle_streams: int = 1000
    embedded_turns: int = 30
    append_events: int = 40_000
    # Issue 16: events of due sessions one retention pass deletes (as many kept beside them).
    retention_events: int = 100_000
    warm_up: int = 5
    validate_runs: int = 5
    # Issue 11.
    cpu_turns: int = 100
    burst: int = 100
    burst_sleep: float = 2.0
    long_session: int = 1000
    fairness_turns: int = 30
    fairness_seconds: float = 20.0
    flooders: int = 16
    slack: int = 100
    # Issue 13: fires of a `* * * * *` schedule (a minute each).
    schedule_fires: int = 3
    # Issue 15: /v1/mcp asks (new sessions, then as many follow-ups).
    mcp_asks: int = 200
    # Issue 14: one-turn eval cases of a model that takes eval_sleep s, eval_concurrency at once.
    eval_cases: int = 100
    eval_concurrency: int = 20
    eval_sleep: float = 1.0
    # Issue 15: in-process turns per kind of tool call (bench/mcp_calls.py), MCP client side.
    mcp_turns: int = 500
    # Issue 16: new sessions of each agent, with an experiment and without.
    ab_sessions: int = 100
    # Issue 17: revisions of a 200-tool agent uploaded and activated one after the other.
    deploy_runs: int = 5
    # Issue 17: tool calls in-process and in a warm sandbox runner; cold runner starts.
    sandbox_calls: int = 500
    sandbox_cold: int = 5
    # Issue 18: new sessions with the quota checks on, and as many with them off.
    quota_sessions: int = 100
    rls_requests: int = 200


QUICK = Sizes(
    turns=30,
    follow_ups=100,
    throughput_seconds=3.0,
    clients=(16,),
    idle_streams=100,
    append_events=10_000,
    retention_events=10_000,
    validate_runs=2,
    cpu_turns=30,
    # 100 at once still, but of a 1 s model: a worker that runs two turns at a time
    # (today's default) takes 50 s over it instead of 100 s.
    burst_sleep=1.0,
    long_session=100,  # the follow-up benchmark's session: no extra turns
    fairness_turns=10,
    fairness_seconds=5.0,
    slack=20,
    schedule_fires=1,
    mcp_asks=30,
    mcp_turns=100,
    ab_sessions=30,
    deploy_runs=3,
    sandbox_calls=100,
    sandbox_cold=2,
    quota_sessions=30,
    rls_requests=50,
)


# ---------------------------------------------------------------- the distributed form


def agents_dir(work: Path, sizes: Sizes) -> tuple[Path, int]:
    """An AGENTS_DIR holding the weather example as it is, a copy of it without its cap,
    one with a Slack pack (``bench/slack.py``), the ticker and the eval agent
    (``bench/evals.py``); and the port of the Slack one's fake Slack."""
    folder = work / "agents"
    folder.mkdir()
    slack_port = slack.add_agent(folder)
    example = ROOT / "examples" / AGENT
    # Copied, not linked: a symlink in AGENTS_DIR that leads out of it is not served.
    shutil.copytree(example, folder / AGENT, ignore=shutil.ignore_patterns("__pycache__"))
    copy = folder / UNCAPPED
    shutil.copytree(example, copy, ignore=shutil.ignore_patterns("__pycache__"))
    definition = copy / "agent" / "agent.py"
    text, found = re.subn(r"\bmax_running_turns\s*=\s*\d+", "max_running_turns=None", definition.read_text())
    if not found:
        raise BenchError(f"could not take max_running_turns out of {definition}")
    definition.write_text(text)
    tracing.add_agent(folder)
    write_ticker(folder)
    write_eval_agent(folder, sizes.eval_cases, sizes.eval_concurrency, sizes.eval_sleep)
    write_ab_agents(folder)
    return folder, slack_port


def worker_argv(extra: str, queue: str) -> list[str]:
    """The turns' worker as compose starts it, ``celery -A agent_platform worker -X
    <queue>.schedules`` (pool and concurrency from the settings, every queue but the
    schedules one), then ``extra`` (``--worker-args``, shell words; ``{queue}`` in them
    is this run's queue name, for ``-Q {queue}``).

    The queue reaches the worker through ``PLATFORM_TASK_QUEUE`` in its environment, not
    ``-Q``: a bare worker consumes the queues the settings name, so it keeps consuming all
    of them when there are several, where ``-Q`` would narrow it to the ones listed.
    """
    words = [word.replace("{queue}", queue) for word in shlex.split(extra)]
    return [PYTHON, "-m", "celery", "-A", "agent_platform", "worker", "-X", schedules_queue(queue), *words]


def schedules_worker_argv(queue: str) -> list[str]:
    """The worker of schedules and eval runs, as compose's ``schedules-worker``."""
    return [PYTHON, "-m", "celery", "-A", "agent_platform", "worker", "-Q", schedules_queue(queue)]


def schedules_queue(prefix: str) -> str:
    return f"{prefix}.schedules"  # sessions_app.queues.queue_name (the bench imports no project code)


def start_distributed(
    processes: Processes, work: Path, database: str, worker_args: str, sizes: Sizes, settings: dict[str, str]
) -> Stack:
    """A fresh database, migrated; two tenants and a token each; one daphne and one Celery
    worker; ``settings`` (``--setting``) in the environment of all of them."""
    database_url = f"postgres://postgres@127.0.0.1:5432/{database}"
    queue = f"bench-{uuid.uuid4().hex[:8]}"  # no other worker on this Redis takes our turns
    folder, slack_port = agents_dir(work, sizes)
    env = {
        **base_env(),
        "DATABASE_URL": database_url,
        "REDIS_URL": REDIS_URL,
        "SECRET_KEY": "bench-only-not-secret",
        "PLATFORM_DEV": "0",
        "PLATFORM_TASK_QUEUE": queue,
        "PLATFORM_VAR_DIR": str(work / "var"),
        "AGENTS_DIR": str(folder),
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # A load test starts more sessions a minute than the default cap (1,200): the
        # throughput and fairness floods would meet 429s (docs/quotas.md). The quota
        # checks still run at every create; --setting may set the cap back.
        "PLATFORM_QUOTA_SESSIONS_PER_MINUTE": "1000000",
        **slack.ENV,
        **settings,
    }
    create_database(database)
    manage(["migrate", "--noinput"], env, timeout=300)
    tokens = []
    for tenant in ("bench-run", "bench-other"):
        manage(["tenant", "create", tenant], env)
        tokens.append(manage(["token", "create", tenant, "bench"], env).strip().splitlines()[-1].strip())
    # Slack's sessions belong to the principal "slack" of the AGENTS_DIR agents' tenant.
    manage(["tenant", "create", "local"], env)
    slack_token = manage(["token", "create", "local", "slack"], env).strip().splitlines()[-1].strip()
    port = free_port()
    daphne = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"]
    web = processes.start("daphne", daphne, env)
    command = worker_argv(worker_args, queue)
    celery = processes.start("celery", command, env)
    schedules_worker = processes.start("celery-schedules", schedules_worker_argv(queue), env)
    wait_healthy(port, web)
    return Stack(
        port,
        tokens[0],
        web,
        celery,
        database,
        database_url,
        schedules_worker=schedules_worker,
        other_token=tokens[1],
        worker_command=command,
        slack_token=slack_token,
        slack_port=slack_port,
        env=env,
    )


# The worker's start-up banner: ".> concurrency: 8 (thread)".
BANNER_CONCURRENCY = re.compile(r"concurrency:\s*(\d+)\s*\((\w+)\)")


def worker_pool(stack: Stack) -> str:
    """The pool and concurrency the worker reported at start-up, as "8 (thread)"."""
    found = BANNER_CONCURRENCY.search(stack.worker.log_tail(200))
    return f"{found[1]} ({found[2]})" if found else "unknown"


def warm_up(stack: Stack, turns: int) -> list[Row]:
    """A few turns of each agent first: the worker discovers an agent and opens its
    connections on its first turn, which is start-up cost, not turn overhead."""
    api = stack.api()
    try:
        for agent in (AGENT, UNCAPPED, EVAL_AGENT):
            for _ in range(turns):
                timed_turn(api, "hello", settle=True, agent=agent)
    finally:
        api.close()
    return []


def bench_reference(stack: Stack) -> list[Row]:
    """Plain requests on one keep-alive connection, to set the turn figures against:
    ``/healthz`` (no auth, one database query) and ``/api/v1/me`` (token auth, DRF)."""
    api = stack.api()
    rows = []
    try:
        for path in ("/healthz", "/api/v1/me"):
            samples = []
            for _ in range(200):
                sent = time.time()
                api.expect(200, "GET", path)
                samples.append(ms(time.time() - sent))
            rows.append(Row(f"reference: GET {path} p50", statistics.median(samples), "ms"))
    finally:
        api.close()
    return rows


def bench_turn_overhead(stack: Stack, sizes: Sizes) -> list[Row]:
    """New sessions one after another: POST /v1/session to turn.completed on its stream."""
    api = stack.api()
    timings = []
    # CPU time the two servers spend per turn (its requests, the task, the events):
    # with 2 cores, 2 s / (their sum) bounds turns/s whatever the concurrency.
    # Whole process trees: a prefork worker runs its turns in child processes.
    cpu_before = tree_cpu_seconds(stack.web.pid), tree_cpu_seconds(stack.worker.pid)
    try:
        for _ in range(sizes.turns):
            timing, session_id = timed_turn(api, "hello", settle=True)
            timings.append(timing)
            stack.left_idle(session_id)
    finally:
        api.close()
    web_cpu = (tree_cpu_seconds(stack.web.pid) - cpu_before[0]) / len(timings)
    worker_cpu = (tree_cpu_seconds(stack.worker.pid) - cpu_before[1]) / len(timings)
    totals = [ms(t.total) for t in timings]
    return [
        Row("turn overhead p50", statistics.median(totals), "ms", 15, "lower"),
        Row("turn overhead p95", percentile(totals, 95), "ms"),
        Row("turn overhead p99", percentile(totals, 99), "ms", 50, "lower"),
        *breakdown_rows("turn", timings),
        Row("turn: daphne CPU per turn", ms(web_cpu), "ms"),
        Row("turn: celery worker CPU per turn", ms(worker_cpu), "ms"),
    ]


def bench_follow_up(stack: Stack, sizes: Sizes) -> list[Row]:
    """One session, N turns: POST a follow-up (admission enqueue) to its turn.completed,
    read on a stream held open since the session started. The follow-up rows look at
    turns 2 to ``follow_ups``, the long-session rows at all ``long_session`` of them:
    one session serves both, as turn 500 of a session is the same whatever follows it."""
    turns = max(sizes.follow_ups, sizes.long_session)
    with FollowUps(stack) as session:
        totals = [session.next() for _ in range(turns - 1)]  # totals[0] is turn 2
    rows = []
    if sizes.follow_ups >= 11:
        last = sizes.follow_ups
        upto = totals[: last - 1]
        first_ten, last_ten = statistics.median(upto[:10]), statistics.median(upto[-10:])
        rows += [
            Row("follow-up overhead p50", statistics.median(upto), "ms", 12, "lower"),
            Row("follow-up overhead p95", percentile(upto, 95), "ms"),
            Row("follow-up turn 2", upto[0], "ms"),
            Row(f"follow-up turn {last}", upto[-1], "ms"),
            Row(f"follow-up turn {last} / turn 2", upto[-1] / upto[0], "ratio", 1.3, "lower"),
            # One sample at each end is noisy; the same ratio of ten-turn medians is steadier.
            Row(f"follow-up turns {last - 9}-{last} / turns 2-11 (p50s)", last_ten / first_ten, "ratio", 1.3, "lower"),
        ]
    if sizes.long_session >= 20:
        last = sizes.long_session
        tenth = last // 10
        # The first tenth of the session's turns are follow-ups from turn 2 (turn 1 made it).
        early, late = totals[:tenth], totals[last - 1 - tenth : last - 1]
        rows += [
            Row(f"long session: turn {last}", late[-1], "ms"),
            Row(f"long session: turns 2-{tenth + 1} p50", statistics.median(early), "ms"),
            Row(f"long session: turns {last - tenth + 1}-{last} p50", statistics.median(late), "ms"),
            Row(
                f"long session: turns {last - tenth + 1}-{last} / turns 2-{tenth + 1} (p50s)",
                statistics.median(late) / statistics.median(early),
                "ratio",
                1.2,
                "lower",
            ),
        ]
    return rows


def bench_throughput(stack: Stack, sizes: Sizes, clients: int) -> list[Row]:
    """``clients`` threads, each starting sessions back to back (POST, then its stream until
    session.waiting) for a fixed time; completed turns per second over the whole run."""
    go = threading.Barrier(clients + 1)
    deadline = [0.0]  # set just before the barrier opens
    latencies: list[list[float]] = [[] for _ in range(clients)]
    started: list[list[str]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []

    def client(n: int) -> None:
        api = stack.api()
        try:
            go.wait(timeout=TIMEOUT)
            while time.time() < deadline[0]:
                timing, session_id = timed_turn(api, "hello", settle=True, agent=UNCAPPED)
                latencies[n].append(ms(timing.total))
                started[n].append(session_id)
        except Exception as error:  # noqa: BLE001 - any failure of a client thread is reported by the main one
            errors.append(error)
        finally:
            api.close()

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    deadline[0] = time.time() + sizes.throughput_seconds
    began = time.time()
    go.wait(timeout=TIMEOUT)
    for thread in threads:
        # Each client finishes the turn it is in after the deadline; that turn has its own timeout.
        thread.join(timeout=sizes.throughput_seconds + 3 * TIMEOUT)
    elapsed = time.time() - began
    if errors:
        raise BenchError(f"throughput with {clients} clients: {errors[0]!r}")
    for batch in started:
        for session_id in batch:
            stack.left_idle(session_id, UNCAPPED)
    every = [latency for batch in latencies for latency in batch]
    if not every:
        raise BenchError(f"throughput with {clients} clients: no turn completed")
    target = (200, "higher") if clients == 16 else (None, "")
    return [
        Row(f"throughput, {clients} clients", len(every) / elapsed, "turns/s", *target),
        Row(f"throughput, {clients} clients: turn latency p50", statistics.median(every), "ms"),
    ]


def bench_streaming(stack: Stack) -> list[Row]:
    """One ``/stream 10000`` turn read by one NDJSON client: deltas per second and the
    time from turn.started to the first message.appended."""
    api = stack.api()
    try:
        created = api.expect(201, "POST", sessions(AGENT), {"message": f"/stream {STREAM_DELTAS}"})
        turn_id = created["turnId"]
        stream = api.stream(f"{sessions(AGENT)}/{created['sessionId']}/stream?startIndex=0")
        try:
            seen = stream.until(lambda r: r.type == "turn.completed" and r.turn_id == turn_id, timeout=120)
            seen += stream.until(lambda r: r.type == "session.waiting")
        finally:
            stream.close()
    finally:
        api.close()
    stack.left_idle(created["sessionId"])
    started = next(r for r in seen if r.type == "turn.started")
    appended = [r for r in seen if r.type == "message.appended" and r.turn_id == turn_id]
    deltas = len(DELTA_TOKEN.findall("".join(r.event["data"].get("text", "") for r in appended)))
    if deltas != STREAM_DELTAS:
        raise BenchError(f"streaming: {deltas} deltas read, {STREAM_DELTAS} sent")
    first, last = appended[0], appended[-1]
    # Measured from turn.started being *recorded*: the client often reads turn.started in
    # one batch with the first deltas, so its read time would flatter both figures.
    began = started.at_server
    return [
        Row("streaming: deltas/s read by the client", deltas / (last.at_client - began), "deltas/s", 20_000, "higher"),
        Row("streaming: deltas/s recorded (event at)", deltas / (last.at_server - began), "deltas/s"),
        Row("streaming: message.appended events", len(appended), "events"),
        Row("streaming: first delta recorded after turn.started", ms(first.at_server - began), "ms", 10, "lower"),
        Row("streaming: first delta read after turn.started", ms(first.at_client - began), "ms", 10, "lower"),
    ]


def ensure_idle_streams(stack: Stack, count: int) -> list[str]:
    """Stream paths of ``count`` waiting sessions: those earlier benchmarks left, and new ones if short."""
    api = stack.api()
    try:
        while len(stack.idle_streams) < count:
            _, session_id = timed_turn(api, "hello", settle=True)
            stack.left_idle(session_id)
    finally:
        api.close()
    return stack.idle_streams[:count]


def bench_idle_streams(stack: Stack, sizes: Sizes) -> list[Row]:
    """N NDJSON streams held open on N idle sessions (headers read, nothing more);
    the daphne process's RSS before and with them."""
    paths = ensure_idle_streams(stack, sizes.idle_streams)
    time.sleep(1)  # let the server settle after the turns that made the sessions
    before = rss_kb(stack.web.pid)
    opened: list[Any] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def open_some(part: list[str]) -> None:
        for path in part:
            try:
                sock = open_idle_stream(stack.port, stack.token, path)
            except Exception as error:  # noqa: BLE001 - reported by the main thread
                errors.append(error)
                return
            with lock:
                opened.append(sock)

    openers = 4  # a few threads, as several clients would
    began = time.time()
    threads = [threading.Thread(target=open_some, args=(paths[n::openers],), daemon=True) for n in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=len(paths) * TIMEOUT)
    took = time.time() - began
    try:
        if errors or not opened:
            raise BenchError(f"idle streams: {len(opened)} opened, then {errors[:1]!r}")
        # An idle stream reads the table once a second; wait a few rounds so the
        # memory read is what the streams settle at, not a transient.
        time.sleep(3)
        after = rss_kb(stack.web.pid)
    finally:
        for sock in opened:
            sock.close()
    per_stream_kb = (after - before) / len(opened)
    return [
        Row("idle streams held open", len(opened), "streams"),
        Row("idle streams: time to open them all", took, "s"),
        Row("daphne RSS before the streams", before / 1024, "MB"),
        Row(f"daphne RSS with {len(opened)} idle streams", after / 1024, "MB"),
        Row("daphne RSS per idle stream", per_stream_kb, "KB"),
        # The target is for 1,000 streams; when fewer were opened (--quick), this extrapolates linearly.
        Row(
            "daphne RSS at 1,000 idle streams" + ("" if len(opened) >= 1000 else " (projected)"),
            (before + 1000 * per_stream_kb) / 1024,
            "MB",
            200,
            "lower",
        ),
    ]


def bench_append(stack: Stack, sizes: Sizes) -> list[Row]:
    """bench/append_events.py itself (8 writers, batches of 20) against this run's database.
    In a child process, so the runner stays a plain HTTP client with no Django in it."""
    env = {**base_env(), "DATABASE_URL": stack.database_url, "REDIS_URL": REDIS_URL, "LOG_LEVEL": "WARNING"}
    env["SECRET_KEY"] = "bench-only-not-secret"  # noqa: S105 - a throwaway key for a throwaway database
    argv = [PYTHON, "bench/append_events.py", "--events", str(sizes.append_events), "--writers", "8", "--batch", "20"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise BenchError(f"append_events.py failed:\n{done.stdout}{done.stderr}")
    # The last line of its table: "writers batch events/s".
    writers, batch, rate = done.stdout.strip().splitlines()[-1].split()
    measure = f"events appended ({writers} writers, batch {batch})"
    return [Row(measure, float(rate.replace(",", "")), "events/s", 20_000, "higher")]


def bench_retention(stack: Stack, sizes: Sizes) -> list[Row]:
    """bench/retention.py: one retention pass over ``retention_events`` events of due
    sessions beside as many kept ones, made with bulk SQL in this run's database. In a
    child process, like the append benchmark."""
    env = {**stack.env, "LOG_LEVEL": "WARNING"}
    argv = [PYTHON, "bench/retention.py", "--events", str(sizes.retention_events)]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise BenchError(f"retention.py failed:\n{done.stdout}{done.stderr}")
    # The last line of its table: "events sessions seconds events/s longest-tx-ms".
    events, _, seconds, rate, longest = done.stdout.strip().splitlines()[-1].split()
    return [
        Row(f"retention pass over {int(events):,} events", float(seconds) * 1000, "ms"),
        Row("retention: events deleted per second", float(rate.replace(",", "")), "events/s"),
        Row("retention: longest delete transaction", float(longest), "ms", 500, "lower"),
    ]


# ---------------------------------------------------------------- the embedded form


def bench_embedded(processes: Processes, var_dir: Path, sizes: Sizes) -> list[Row]:
    """``manage.py agent serve`` as ``make run`` starts it (dev mode, SQLite, in-process
    worker and channel layer): sequential echo turns, timed the same way, no token."""
    env = {key: os.environ[key] for key in ("PATH", "HOME") if key in os.environ}
    env["PLATFORM_VAR_DIR"] = str(var_dir)
    manage(["migrate", "--noinput"], env, timeout=300)
    port = free_port()
    server = processes.start("embedded", [PYTHON, "manage.py", "agent", "serve", "--port", str(port)], env)
    try:
        wait_healthy(port, server)
        api = Api(port, None)
        try:
            for _ in range(sizes.warm_up):
                timed_turn(api, "hello", settle=True)
            timings = [timed_turn(api, "hello", settle=True)[0] for _ in range(sizes.embedded_turns)]
        finally:
            api.close()
    finally:
        processes.stop(server)
    totals = [ms(t.total) for t in timings]
    return [
        Row("embedded: turn overhead p50", statistics.median(totals), "ms"),
        Row("embedded: turn overhead p95", percentile(totals, 95), "ms"),
        *breakdown_rows("embedded", timings),
    ]


# ---------------------------------------------------------------- agent validate


def bench_validate(work: Path, sizes: Sizes) -> list[Row]:
    """``manage.py agent validate`` on a generated agent with 200 tools (and the 50 skills
    and 20 hooks of bench/discovery.py), as a developer runs it: a new process each time,
    from start to exit, no server and no database."""
    folder = work / "validate-agents" / "big"
    generate(folder, tools=200, skills=50, hooks=20)
    env = {**base_env(), "PLATFORM_VAR_DIR": str(work / "validate-var")}
    samples = []
    for _ in range(sizes.validate_runs):
        began = time.time()
        output = manage(["agent", "validate", "--dir", str(folder)], env)
        samples.append(ms(time.time() - began))
        if "big: ok" not in output:
            raise BenchError(f"agent validate did not pass the generated agent:\n{output}")
    return [Row("agent validate, 200 tools (whole command) p50", statistics.median(samples), "ms")]


# ---------------------------------------------------------------- MCP tool calls


def bench_mcp_calls(sizes: Sizes) -> list[Row]:
    """bench/mcp_calls.py: an in-process turn calling the weather agent's plain tool, and one
    calling its almanac stdio MCP server (warm), p50 and p99 of each; no server needed."""
    argv = [PYTHON, "bench/mcp_calls.py", "--turns", str(sizes.mcp_turns)]
    done = subprocess.run(argv, cwd=ROOT, env=base_env(), capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise BenchError(f"mcp_calls.py failed:\n{done.stdout}{done.stderr}")
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.strip().splitlines()[1:]}
    rows = []
    for key, label in (("plain_tool", "plain tool call"), ("mcp_stdio_tool", "MCP tool call (stdio, warm)")):
        p50, p99 = (float(value) for value in lines[key])
        rows += [Row(f"in-process turn, {label} p50", p50, "ms"), Row(f"in-process turn, {label} p99", p99, "ms")]
    rows.append(Row("MCP tool-call overhead (stdio, warm) p50", float(lines["overhead_p50_ms"][0]), "ms"))
    return rows


# ---------------------------------------------------------------- the sandbox


def bench_sandbox(sizes: Sizes) -> list[Row]:
    """bench/sandbox.py: a tool call in-process, in a warm sandbox runner and in a cold one
    (issue 17: a warm sandboxed call adds under 2 ms); no server needed."""
    argv = [PYTHON, "bench/sandbox.py", "--calls", str(sizes.sandbox_calls), "--cold", str(sizes.sandbox_cold)]
    done = subprocess.run(argv, cwd=ROOT, env=base_env(), capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise BenchError(f"sandbox.py failed:\n{done.stdout}{done.stderr}")
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.strip().splitlines()[1:]}
    rows = []
    for key, label in (
        ("in_process", "tool call in-process"),
        ("sandboxed_warm", "tool call in the sandbox, warm runner"),
        ("sandboxed_cold", "tool call in the sandbox, cold runner (start + call)"),
    ):
        p50, p99 = (float(value) for value in lines[key])
        rows += [Row(f"{label} p50", p50, "ms"), Row(f"{label} p99", p99, "ms")]
    rows.append(Row("sandboxed tool-call overhead (warm) p50", float(lines["overhead_p50_ms"][0]), "ms", 2.0, "lower"))
    return rows


# ---------------------------------------------------------------- main


# The names ``--only`` takes, in the order the benchmarks run.
BENCHMARKS = (
    "reference",
    "turns",
    "tracing",
    "follow-ups",
    "cpu",
    "streaming",
    "throughput",
    "idle-streams",
    "append",
    "retention",
    "burst",
    "fairness",
    "slack",
    "schedule-lag",
    "mcp",
    "evals",
    "ab",
    "deploy",
    "quotas",
    "rls",
    "embedded",
    "validate",
    "mcp-client",
    "sandbox",
)


@dataclass
class Run:
    """The rows measured so far and the benchmarks that could not measure."""

    processes: Processes
    rows: list[Row] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    worker: dict[str, str] = field(default_factory=dict)  # how the worker was started, and what it said it runs

    def step(self, name: str, bench: Callable[[], list[Row]]) -> None:
        """Run one benchmark; a failure is reported and the others still run."""
        print(f"  {name} ...", end="", flush=True)
        began = time.time()
        try:
            self.rows.extend(bench())
        except (BenchError, OSError, http.client.HTTPException) as error:  # OSError: refused, reset, timed out
            print(f" FAILED after {time.time() - began:.1f} s: {error}", flush=True)
            self.failed.append(f"{name}: {error}")
            self.rows.append(Row(f"{name}: could not measure", None, ""))
            for process in self.processes.running:  # the logs go with the temporary folder
                print(f"    --- last lines of {process.name}.log ---\n{process.log_tail(15)}", flush=True)
            return
        print(f" {time.time() - began:.1f} s", flush=True)


def run_all(
    sizes: Sizes,
    work: Path,
    worker_args: str,
    only: frozenset[str] = frozenset(),
    settings: dict[str, str] | None = None,
) -> Run:
    processes = Processes(work)
    database = f"agent_platform_bench_{os.getpid()}"
    run = Run(processes)
    try:
        print(f"starting the distributed form (database {database}, logs in {work})", flush=True)
        stack = start_distributed(processes, work, database, worker_args, sizes, settings or {})
        run.step("warm-up", lambda: warm_up(stack, sizes.warm_up))
        # Its start-up banner is out by now; it says what the settings and --worker-args made of it.
        run.worker = {"command": shlex.join(stack.worker_command[2:]), "concurrency": worker_pool(stack)}
        print(f"  worker: {run.worker['command']}: concurrency {run.worker['concurrency']}", flush=True)
        steps: list[tuple[str, str, Callable[[], list[Row]]]] = [
            ("reference", "reference request", lambda: bench_reference(stack)),
            ("turns", f"turn overhead ({sizes.turns} sessions)", lambda: bench_turn_overhead(stack, sizes)),
            (
                "tracing",
                f"tracing cost ({sizes.turns // 2} + {sizes.turns // 2} tool turns)",
                lambda: tracing.bench_tracing(stack, max(10, sizes.turns // 2)),
            ),
            (
                "follow-ups",
                f"follow-up overhead and long session ({max(sizes.follow_ups, sizes.long_session)} turns)",
                lambda: bench_follow_up(stack, sizes),
            ),
            (
                "cpu",
                f"CPU per turn ({sizes.cpu_turns} + {sizes.cpu_turns} turns)",
                lambda: bench_cpu_per_turn(stack, sizes.cpu_turns),
            ),
            ("streaming", f"streaming (/stream {STREAM_DELTAS})", lambda: bench_streaming(stack)),
            *(
                (
                    "throughput",
                    f"throughput ({clients} clients)",
                    functools.partial(bench_throughput, stack, sizes, clients),
                )
                for clients in sizes.clients
            ),
            ("idle-streams", f"idle streams ({sizes.idle_streams})", lambda: bench_idle_streams(stack, sizes)),
            ("append", "events appended", lambda: bench_append(stack, sizes)),
            (
                "retention",
                f"retention pass ({sizes.retention_events:,} events due)",
                lambda: bench_retention(stack, sizes),
            ),
            (
                "burst",
                f"burst ({sizes.burst} sessions at once, a {sizes.burst_sleep:g} s model)",
                lambda: bench_burst(stack, sizes.burst, sizes.burst_sleep),
            ),
            (
                "fairness",
                f"fairness (tenant B alone, then beside {sizes.flooders} clients of tenant A)",
                lambda: bench_fairness(stack, sizes.fairness_turns, sizes.flooders, sizes.fairness_seconds),
            ),
            (
                "slack",
                f"Slack delivery to first event ({sizes.slack} signed mentions)",
                lambda: slack.bench_slack(stack, stack.slack_token or "", stack.slack_port, sizes.slack),
            ),
            (
                "schedule-lag",
                f"schedule fire lag ({sizes.schedule_fires} fires of a * * * * * schedule, a real beat)",
                lambda: bench_schedule_lag(processes, stack, stack.env, sizes.schedule_fires),
            ),
            (
                "mcp",
                f"/v1/mcp ask ({sizes.mcp_asks} + {sizes.mcp_asks} asks)",
                lambda: bench_mcp_ask(stack, sizes.mcp_asks),
            ),
            (
                "evals",
                f"eval run ({sizes.eval_cases} one-turn cases, {sizes.eval_concurrency} at once, "
                f"a {sizes.eval_sleep:g} s model)",
                lambda: bench_evals(stack, sizes.eval_cases, sizes.eval_concurrency, sizes.eval_sleep),
            ),
            (
                "ab",
                f"A/B assignment ({sizes.ab_sessions} + {sizes.ab_sessions} sessions)",
                lambda: bench_ab(stack, sizes.ab_sessions),
            ),
            (
                "deploy",
                f"deployment upload to active ({sizes.deploy_runs} revisions of a 200-tool agent)",
                lambda: bench_deploy(stack, work, sizes.deploy_runs),
            ),
            (
                "quotas",
                f"quota checks ({sizes.quota_sessions} + {sizes.quota_sessions} sessions, quotas on and off)",
                lambda: bench_quotas(processes, stack, sizes.quota_sessions),
            ),
            (
                "rls",
                f"row-level security ({sizes.rls_requests} requests per route, RLS off and on)",
                lambda: bench_rls(processes, stack, sizes.rls_requests),
            ),
        ]
        for key, name, bench in steps:
            if not only or key in only:
                run.step(name, bench)
        processes.stop_all()  # the embedded form gets the machine to itself
        if not only or "embedded" in only:
            print("starting the embedded form", flush=True)
        if not only or "embedded" in only:
            run.step(
                f"embedded turn overhead ({sizes.embedded_turns} turns)",
                lambda: bench_embedded(processes, work / "embedded-var", sizes),
            )
        if not only or "validate" in only:
            run.step("agent validate (200 tools)", lambda: bench_validate(work, sizes))
        if not only or "mcp-client" in only:
            run.step(f"MCP tool calls ({sizes.mcp_turns} turns per kind)", lambda: bench_mcp_calls(sizes))
        if not only or "sandbox" in only:
            run.step(f"sandboxed tool calls ({sizes.sandbox_calls} warm)", lambda: bench_sandbox(sizes))
    finally:
        processes.stop_all()
        tracing.close()
        drop_database(database)
        if database_exists(database):
            print(f"warning: could not drop database {database}", file=sys.stderr)
    return run


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    # SIGTERM becomes an exception so the finally blocks stop the servers and drop the database.
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller counts and shorter runs: a smoke run")
    parser.add_argument("--json", type=Path, help="where to save the results (default bench/results/<time>.json)")
    parser.add_argument("--compare", type=Path, help="an earlier results file: print new/old for each measure")
    parser.add_argument(
        "--worker-args",
        default="",
        metavar="ARGS",
        help='more flags for `celery -A agent_platform worker`, e.g. "--pool=threads --concurrency=100" '
        '(default none: pool and concurrency from the settings); "{queue}" is replaced by the run\'s queue',
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable for the platform's processes, e.g. PLATFORM_WORKER_DB_THREADS=2 "
        "(repeatable): to measure what a setting changes",
    )
    parser.add_argument("--burst", type=int, metavar="N", help="sessions started at once in the burst (default 100)")
    parser.add_argument(
        "--burst-sleep", type=float, metavar="S", help="seconds the model takes in each burst turn (default 2, quick 1)"
    )
    parser.add_argument(
        "--long-session", type=int, metavar="N", help="turns of the long session (default 1,000, quick 100)"
    )
    parser.add_argument(
        "--only",
        metavar="NAMES",
        help=f"run only these benchmarks (comma-separated; the warm-up always runs): {', '.join(BENCHMARKS)}",
    )
    args = parser.parse_args()
    only = frozenset(name.strip() for name in (args.only or "").split(",") if name.strip())
    if only - set(BENCHMARKS):
        parser.error(f"--only: unknown {', '.join(sorted(only - set(BENCHMARKS)))}; known: {', '.join(BENCHMARKS)}")
    if args.compare and not args.compare.is_file():
        parser.error(f"--compare: no file {args.compare}")
    try:
        worker_argv(args.worker_args, "q")
    except ValueError as error:
        parser.error(f"--worker-args: {error}")
    if any("=" not in setting for setting in args.setting):
        parser.error("--setting takes NAME=VALUE")
    settings = dict(setting.split("=", 1) for setting in args.setting)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    sizes = QUICK if args.quick else Sizes()
    given = {"burst": args.burst, "burst_sleep": args.burst_sleep, "long_session": args.long_session}
    sizes = replace(sizes, **{name: value for name, value in given.items() if value is not None})
    if sizes.burst < 1 or sizes.burst_sleep < 0:
        parser.error("--burst must be at least 1, --burst-sleep at least 0")
    if sizes.long_session < 20:
        parser.error("--long-session must be at least 20: its first and last tenths are compared")
    started = time.strftime("%Y%m%d-%H%M%S")
    # Other work on the machine skews every figure; say how busy it was.
    load = os.getloadavg()
    print(f"load average before the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory(prefix="agent-platform-bench-") as tmp:
        try:
            run = run_all(sizes, Path(tmp), args.worker_args, only, settings)
        except (BenchError, OSError, subprocess.SubprocessError, KeyboardInterrupt) as error:
            print(f"\nbench stopped: {error!r}", file=sys.stderr)
            return 1
    print()
    print_table(run.rows)
    out = args.json or ROOT / "bench" / "results" / f"{started}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "started": started,
        "quick": args.quick,
        "sizes": asdict(sizes),
        "machine": {
            "cpus": os.cpu_count(),
            "load_before": load,
            "python": platform.python_version(),
            "system": platform.platform(),
        },
        "worker": run.worker,
        "settings": settings,
        "rows": [{**asdict(row), "target": row.target, "met": row.met} for row in run.rows],
        "failed": run.failed,
    }
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nsaved {out}")
    if args.compare:
        print_comparison(run.rows, args.compare)
    missed = [row.measure for row in run.rows if row.met is False]
    print(f"\ntargets: {sum(row.met is True for row in run.rows)} met, {len(missed)} missed")
    for name in missed:
        print(f"  missed: {name}")
    for failure in run.failed:
        print(f"  could not measure: {failure}")
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
