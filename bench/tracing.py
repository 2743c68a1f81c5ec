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


def _cpu_per_turn(stack: Stack, agent: str, turns: int) -> float:
    api: Api = stack.api()
    cpu_before = tree_cpu_seconds(stack.worker.pid)
    try:
        for _ in range(turns):
            _, session_id = timed_turn(api, MESSAGE, settle=True, agent=agent)
            stack.left_idle(session_id, agent)
    finally:
        api.close()
    return (tree_cpu_seconds(stack.worker.pid) - cpu_before) / turns


def bench_tracing(stack: Stack, turns: int) -> list[Row]:
    assert _receiver is not None, "add_agent() first"
    agents = {UNCAPPED: "no exporter", OTEL_AGENT: "exporting to a local receiver"}
    for agent in agents:  # each agent's first turns discover it
        _cpu_per_turn(stack, agent, 3)
    # Latency: the two agents turn about, so a busy moment of the machine falls on both alike.
    totals: dict[str, list[float]] = {agent: [] for agent in agents}
    api: Api = stack.api()
    try:
        for _ in range(turns):
            for agent in agents:
                timing, session_id = timed_turn(api, MESSAGE, settle=True, agent=agent)
                totals[agent].append(ms(timing.total))
                stack.left_idle(session_id, agent)
    finally:
        api.close()
    rows = []
    for agent, label in agents.items():
        rows += [
            Row(f"tracing: tool turn overhead p50, {label}", statistics.median(totals[agent]), "ms"),
            Row(f"tracing: tool turn overhead p95, {label}", percentile(totals[agent], 95), "ms"),
        ]
    # CPU: a block of turns each (the worker's CPU cannot be told apart per turn).
    for agent, label in agents.items():
        rows.append(Row(f"tracing: worker CPU per tool turn, {label}", ms(_cpu_per_turn(stack, agent, turns)), "ms"))
    deadline = time.monotonic() + 10  # the batch processor sends every 5 s by default

    def traced() -> tuple[int, int]:
        spans = [s for s in _receiver.spans() if s.name != "agent_sdk.http"] if _receiver else []
        return sum(s.name == "agent_sdk.turn" for s in spans), len(spans)

    expected = 2 * turns + 3  # turns traced: the latency run's, the CPU block's, the warm-up's
    while traced()[0] < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    turn_count, span_count = traced()
    rows.append(Row("tracing: traced turns whose trace arrived", turn_count, f"of {expected}"))
    rows.append(Row("tracing: spans per traced turn (turn, 2 model calls, tool)", span_count / max(turn_count, 1), ""))
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
        Row("tracing: destination() for an agent that exports nothing", checked * 1e6, "µs"),
    ]
