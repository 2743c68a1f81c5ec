"""What OpenTelemetry costs a turn (docs/observability.md).

A copy of the weather example with an ``otel.py`` naming a local OTLP/HTTP receiver
(``sessions_app/tests/otlp_receiver.py``, in this process) runs the same tool turn as the
uncapped copy without one: the turn overhead (POST to ``turn.completed`` on the stream)
and the worker's CPU per turn of each, side by side, and the spans the receiver got per
turn. Also, in-process, the time to rebuild a tool turn's spans from its events (the
work the worker does once a turn has ended), and the check an agent that exports
nothing pays.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness import ROOT, Api
from meters import tree_cpu_seconds
from table import Row, ms, percentile
from turns import AGENT, UNCAPPED, Stack, timed_turn

sys.path.insert(0, str(ROOT))

from sessions_app.tests.otlp_receiver import Receiver

OTEL_AGENT = "weather-otel"
MESSAGE = '/call get_weather {"city": "Lyon"}'
_receiver: Receiver | None = None


def add_agent(folder: Path) -> None:
    """The traced copy of the weather example, exporting to a receiver started here."""
    global _receiver
    _receiver = Receiver()
    copy = folder / OTEL_AGENT
    shutil.copytree(folder / UNCAPPED, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "agent" / "otel.py").write_text(
        f'from agents.sdk import define_otel\n\notel = define_otel(endpoint="{_receiver.url}")\n'
    )


def close() -> None:
    if _receiver is not None:
        _receiver.close()


def _turns(stack: Stack, agent: str, turns: int) -> tuple[list[float], float]:
    api: Api = stack.api()
    cpu_before = tree_cpu_seconds(stack.worker.pid)
    totals = []
    try:
        for _ in range(turns):
            timing, session_id = timed_turn(api, MESSAGE, settle=True, agent=agent)
            totals.append(ms(timing.total))
            stack.left_idle(session_id)
    finally:
        api.close()
    return totals, (tree_cpu_seconds(stack.worker.pid) - cpu_before) / turns


def bench_tracing(stack: Stack, turns: int) -> list[Row]:
    assert _receiver is not None, "add_agent() first"
    for agent in (UNCAPPED, OTEL_AGENT):  # each agent's first turns discover it
        _turns(stack, agent, 3)
    time.sleep(0.5)
    spans_before = len(_receiver.spans())
    rows = []
    for agent, label in ((UNCAPPED, "no exporter"), (OTEL_AGENT, "exporting to a local receiver")):
        totals, cpu = _turns(stack, agent, turns)
        rows += [
            Row(f"tracing: tool turn overhead p50, {label}", statistics.median(totals), "ms"),
            Row(f"tracing: tool turn overhead p95, {label}", percentile(totals, 95), "ms"),
            Row(f"tracing: worker CPU per tool turn, {label}", ms(cpu), "ms"),
        ]
    deadline = time.monotonic() + 10  # the batch processor sends every 5 s by default
    while len(_receiver.spans()) - spans_before < 4 * turns and time.monotonic() < deadline:
        time.sleep(0.2)
    rows.append(Row("tracing: spans received per traced turn", (len(_receiver.spans()) - spans_before) / turns, ""))
    return rows + bench_rebuild()


def bench_rebuild(repeat: int = 2_000) -> list[Row]:
    """In-process: the spans of a one-tool turn rebuilt from its events, and the check an
    agent without an endpoint pays per turn."""
    from opentelemetry.sdk.resources import Resource

    from agents.sdk import define_otel
    from agents.telemetry import EnvExport, TurnFacts, destination, turn_telemetry

    at = datetime(2026, 1, 1, tzinfo=UTC)
    step = timedelta(milliseconds=1)
    usage = {"inputTokens": 40, "outputTokens": 6}
    events = [
        ("turn.started", {"model": "test"}),
        ("step.started", {"step": 1}),
        ("step.completed", {"step": 1, "usage": usage}),
        ("actions.requested", {"calls": [{"callId": "call_1", "toolName": "get_weather", "args": {"city": "Lyon"}}]}),
        ("action.result", {"callId": "call_1", "toolName": "get_weather", "output": {"c": 14}, "isError": False}),
        ("step.started", {"step": 2}),
        ("step.completed", {"step": 2, "usage": usage}),
        ("turn.completed", {"result": "done", "usage": usage, "cost": None}),
    ]
    records = [(type_, data, at + i * step) for i, (type_, data) in enumerate(events)]
    facts = TurnFacts(session_id="ses_b", agent=AGENT, turn_id="turn_b", channel="http")
    resource = Resource.create({"service.name": "bench"})
    began = time.perf_counter()
    for _ in range(repeat):
        turn_telemetry(records, facts, resource)
    rebuilt = (time.perf_counter() - began) / repeat
    off, env = define_otel(), EnvExport()
    began = time.perf_counter()
    for _ in range(repeat * 10):
        destination(off, env)
    checked = (time.perf_counter() - began) / (repeat * 10)
    return [
        Row("tracing: rebuilding a tool turn's 4 spans from its events", rebuilt * 1e6, "µs"),
        Row("tracing: the per-turn check of an agent that exports nothing", checked * 1e6, "µs"),
    ]
