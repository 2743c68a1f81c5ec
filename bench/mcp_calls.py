"""MCP tool-call overhead (stdio, warm): the weather example's turns in-process with the
``test`` model, one calling the plain tool ``get_weather`` and one calling
``almanac__sun_times`` on the almanac stdio MCP server (``examples/weather/agent/lib``)
through the process's connection pool, already started.

    .venv/bin/python bench/mcp_calls.py [--turns 500]

Prints ``call p50_ms p99_ms`` per kind, then the overhead line; one turn at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CALLS = {
    "plain tool": '/call get_weather {"city": "Oslo"}',
    "mcp stdio tool": '/call almanac__sun_times {"city": "Oslo"}',
}


async def measure(surface: Any, message: str, turns: int) -> list[float]:
    from agents.events import EventType
    from agents.runtime.emitter import MemorySink
    from agents.runtime.turn import TurnRequest, run_turn
    from agents.sdk import SessionInfo

    session = SessionInfo(id="ses_bench", agent="weather")
    samples = []
    for n in range(turns):
        sink = MemorySink()
        began = time.perf_counter()
        outcome = await run_turn(surface, TurnRequest(session, f"turn_{n}", message), sink)
        samples.append(time.perf_counter() - began)
        assert outcome.status == "completed", outcome.failure
        [result] = sink.of_type(EventType.ACTION_RESULT)
        assert not result.data["isError"], result.data
    return samples


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=500)
    args = parser.parse_args()

    from agents.discovery import discover

    surface, _ = discover(ROOT / "examples" / "weather")
    medians: dict[str, float] = {}
    print(f"{'call':<16} {'p50_ms':>8} {'p99_ms':>8}")
    for label, message in CALLS.items():
        asyncio.run(measure(surface, message, 20))  # warm: the server started, its tools listed
        samples = asyncio.run(measure(surface, message, args.turns))
        medians[label] = statistics.median(samples) * 1000
        print(f"{label.replace(' ', '_'):<16} {medians[label]:>8.3f} {p99(samples) * 1000:>8.3f}")
    print(f"overhead_p50_ms {medians['mcp stdio tool'] - medians['plain tool']:.3f}")


if __name__ == "__main__":
    main()
