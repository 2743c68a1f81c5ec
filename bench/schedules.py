"""``schedule-lag``: how late a schedule's session starts after its fire time, through the
whole path users run: a real beat process (django-celery-beat's database scheduler, as
deployed) sends ``fire_schedule`` at each minute of a ``* * * * *`` schedule, the worker
claims the fire and starts the session. The lag is the fire time (the minute) to the
session's ``session.started`` ``at``; a few fires, so a few minutes of wall time.
"""

from __future__ import annotations

import statistics
import time
from datetime import datetime
from pathlib import Path

from harness import PYTHON, BenchError, Processes, manage
from table import Row, ms, percentile
from turns import Stack

TICKER = "ticker"
TICKER_TREE = {
    "agent/instructions.md": "You answer scheduled checks.\n",
    "agent/schedules/minutely.md": '---\ncron: "* * * * *"\ntitle: Tick\n---\nSay tick.\n',
}


def write_ticker(agents_dir: Path) -> None:
    """The agent with the benchmark's schedule (only a beat fires it: the other benchmarks run none)."""
    for relative, text in TICKER_TREE.items():
        path = agents_dir / TICKER / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def bench_schedule_lag(processes: Processes, stack: Stack, env: dict[str, str], fires: int) -> list[Row]:
    """Start a beat, wait for ``fires`` fires of the ticker's schedule, stop the beat."""
    # The sessions belong to the agent's `schedule` principal in the shared-agents tenant
    # (`local`, made by run.py's stack).
    token = manage(["token", "create", "local", "schedule"], env).strip().splitlines()[-1].strip()
    api = stack.api(token)
    beat = processes.start("beat", [PYTHON, "-m", "celery", "-A", "agent_platform", "beat", "--loglevel=WARNING"], env)
    lags: list[float] = []
    try:
        deadline = time.monotonic() + 60 * (fires + 2)
        while len(lags) < fires:
            if time.monotonic() > deadline:
                raise BenchError(f"{len(lags)} of {fires} schedule fires within {fires + 2} minutes")
            time.sleep(2)
            status, body = api.call("GET", f"/{TICKER}/v1/sessions?limit=200")
            if status != 200:
                raise BenchError(f"GET sessions: {status} {body}")
            lags = []
            for session in body["sessions"]:
                status, events = api.call("GET", f"/{TICKER}/v1/session/{session['sessionId']}/events")
                started = _at(events["events"][0]["at"])
                # Under a minute late (a later fire is skipped): the fire time is that minute.
                lags.append((started - started.replace(second=0, microsecond=0)).total_seconds())
    finally:
        api.close()
        processes.stop(beat)
    samples = [ms(lag) for lag in lags[:fires]]
    return [
        Row("schedule fire lag p50", statistics.median(samples), "ms"),
        Row("schedule fire lag p99", percentile(samples, 99), "ms"),
    ]
