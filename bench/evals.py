"""``evals``: eval throughput (issue 14), for ``bench/run.py``.

An agent with N one-turn cases (100; each ``t.send("/sleep S\\nok")``, a model that takes
S seconds, 1 by default) and ``max_concurrency=C`` (20) is generated into the run's
temporary AGENTS_DIR, then run as users run it: ``POST /<slug>/v1/dev/evals/runs``, one
Celery task on the schedules queue driving the cases (in the schedules worker, a process
of its own as compose runs it), each case's turn on the turns' worker, the run polled
with ``GET .../runs/<id>`` until it is no longer running.

The ideal is ``ceil(N / C) * S`` (5 s for 100 cases, 20 at once, 1 s each): what is
above it is the platform's.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any

from harness import TIMEOUT, Api, BenchError, parse_at
from meters import ServerCpu, tree_cpu_seconds
from table import Row, ms, percentile
from turns import Stack

EVAL_AGENT = "evalbench"

CASE = """from agents.sdk import define_eval


async def test(t):
    await t.send({message!r})
    t.succeeded()


case = define_eval(test=test)
"""


def write_eval_agent(agents_dir: Path, cases: int, concurrency: int, sleep: float) -> None:
    """The benchmark's agent: ``cases`` one-turn cases of a model that takes ``sleep`` s.
    Generated, not kept in the repository (a hundred files that say the same thing)."""
    root = agents_dir / EVAL_AGENT
    (root / "agent").mkdir(parents=True)
    (root / "agent" / "instructions.md").write_text("You answer eval turns.\n")
    folder = root / "evals" / "cases"
    folder.mkdir(parents=True)
    config = f"config = define_evals_config(max_concurrency={concurrency})\n"
    (root / "evals" / "evals.config.py").write_text(f"from agents.sdk import define_evals_config\n\n{config}")
    for n in range(cases):
        (folder / f"c{n:03d}.eval.py").write_text(CASE.format(message=f"/sleep {sleep:g}\nok"))


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(began, 1) for began, _ in spans] + [(ended, -1) for _, ended in spans])
    running = most = 0
    for _, step in edges:  # at equal times an end (-1) sorts before a start
        running += step
        most = max(most, running)
    return most


def _run_to_end(api: Api, root: str, body: dict[str, Any], within: float) -> dict[str, Any]:
    """Start a run and poll it (every 50 ms) until it is no longer running."""
    run = api.expect(202, "POST", f"{root}/runs", body)
    deadline = time.monotonic() + within
    while run["status"] == "running":
        if time.monotonic() > deadline:
            raise BenchError(f"evals: run still running after {within:.0f} s")
        time.sleep(0.05)
        run = api.expect(200, "GET", f"{root}/runs/{run['runId']}")
    return run


def bench_evals(stack: Stack, cases: int, concurrency: int, sleep: float) -> list[Row]:
    """One run of every case of the generated agent, from the POST to its end."""
    api = stack.api()
    root = f"/{EVAL_AGENT}/v1/dev/evals"
    try:
        listed = api.expect(200, "GET", root)
        if len(listed["datapoints"]) != cases:
            raise BenchError(f"evals: {len(listed['datapoints'])} cases listed, {cases} generated")
        # The schedules worker meets the agent on its first run (discovers it, imports its
        # cases, opens its connections): start-up cost, as the turns' warm-up is.
        _run_to_end(api, root, {"filterIds": [listed["datapoints"][0]["id"]]}, TIMEOUT + sleep)
        driver = stack.schedules_worker  # the process the run's task runs in
        assert driver is not None, "the stack has no schedules worker"
        driver_before = tree_cpu_seconds(driver.pid)
        with ServerCpu(stack.web.pid, stack.worker.pid, stack.database) as cpu:
            sent = time.time()
            run = _run_to_end(api, root, {}, TIMEOUT + cases * sleep)  # generous: one case at a time
            polled = time.time()
        driver_cpu = tree_cpu_seconds(driver.pid) - driver_before
        if run["status"] != "completed" or run["summary"]["passed"] != cases:
            failing = next((c for c in run["cases"] if c["status"] != "passed"), None)
            raise BenchError(f"evals: run {run['status']}, {run['summary']}; first failing case: {failing}")
        # When each case's turn ran (its events' `at`), to see the concurrency used.
        spans, waits, outside = [], [], []
        first_session = math.inf
        for case in run["cases"]:
            events = api.expect(200, "GET", f"/{EVAL_AGENT}/v1/session/{case['sessionIds'][0]}/events")["events"]
            at = {e["type"]: parse_at(e["at"]) for e in events}
            spans.append((at["turn.started"], at["turn.completed"]))
            waits.append(ms(at["turn.started"] - at["session.started"]))
            # The case's time outside its session: starting it, and hearing its turn's end.
            outside.append(case["durationMs"] - ms(at["turn.completed"] - at["session.started"]))
            first_session = min(first_session, at["session.started"])
    finally:
        api.close()
    # From the POST sent to the run's end as the server recorded it (same clock); the
    # client's last poll is up to 50 ms later and not the platform's.
    finished = min(parse_at(run["finishedAt"]), polled)
    wall = finished - sent
    ideal = math.ceil(cases / concurrency) * sleep
    spent = cpu.spent
    assert spent is not None
    durations = [case["durationMs"] - sleep * 1000 for case in run["cases"]]
    label = f"evals {cases} x {sleep:g} s, {concurrency} at once"
    return [
        # Issue 14: "about 5 s" for 100 cases of 1 s, 20 at once; 1 s of slack.
        Row(f"{label}: wall time", wall, "s", ideal + 1, "lower"),
        Row(f"{label}: ideal (ceil(N / C) x S)", ideal, "s"),
        Row(f"{label}: overhead per case ((wall - ideal) / N)", (wall - ideal) / cases * 1000, "ms"),
        Row(f"{label}: case time over the model's p50", statistics.median(durations), "ms"),
        Row(f"{label}: case time over the model's p95", percentile(durations, 95), "ms"),
        Row(f"{label}: cases/s", cases / wall, "cases/s"),
        Row(f"{label}: turns running at once (most)", _most_at_once(spans), "turns"),
        # Where the time above the model's went: the run's task starting, each case's turn
        # reaching a worker, the run's end after the last turn's.
        Row(f"{label}: POST -> first session.started", ms(first_session - sent), "ms"),
        Row(f"{label}: session.started -> turn.started p50", statistics.median(waits), "ms"),
        Row(f"{label}: session.started -> turn.started p95", percentile(waits, 95), "ms"),
        Row(f"{label}: case outside its session (start, hearing the end) p50", statistics.median(outside), "ms"),
        Row(f"{label}: case outside its session p95", percentile(outside, 95), "ms"),
        Row(f"{label}: turn.started -> turn.completed p50", statistics.median(ms(b - a) for a, b in spans), "ms"),
        Row(f"{label}: last turn.completed -> run finished", ms(finished - max(b for _, b in spans)), "ms"),
        Row(f"{label}: turns' worker (celery) CPU per case", ms(spent.worker / cases), "ms CPU"),
        # Starting each case's session (the web's work for an HTTP session), following it, recording it.
        Row(f"{label}: run's driver (schedules worker) CPU per case", ms(driver_cpu / cases), "ms CPU"),
        Row(f"{label}: Postgres CPU per case", ms(spent.postgres / cases), "ms CPU"),
        # Most of it is this client's polls of the run (GET .../runs/<id> every 50 ms).
        Row(f"{label}: web (daphne) CPU per case", ms(spent.web / cases), "ms CPU"),
    ]
