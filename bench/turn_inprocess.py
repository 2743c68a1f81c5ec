"""In-process turn overhead with the ``test`` model and an in-memory event sink.

    .venv/bin/python bench/turn_inprocess.py [--turns 2000]

Measures the runtime alone (prompt, model stream, tool loop, events), without a
database, broker or HTTP: an echo turn, and a turn with one tool call (two model
steps). One core, one turn at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOOL = '''
from agents.sdk import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


async def measure(surface: Any, message: str, turns: int) -> list[float]:
    from agents.runtime.emitter import MemorySink
    from agents.runtime.turn import TurnRequest, run_turn
    from agents.sdk import SessionInfo

    session = SessionInfo(id="ses_bench", agent="bench")
    samples = []
    for n in range(turns):
        sink = MemorySink()
        began = time.perf_counter()
        outcome = await run_turn(surface, TurnRequest(session, f"turn_{n}", message), sink)
        samples.append(time.perf_counter() - began)
        assert outcome.status == "completed", outcome.failure
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=2000)
    args = parser.parse_args()

    from agents.discovery import discover

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bench"
        (folder / "agent" / "tools").mkdir(parents=True)
        (folder / "agent" / "instructions.md").write_text("You are a benchmark agent.")
        (folder / "agent" / "tools" / "add.py").write_text(TOOL)
        surface, _ = discover(folder)
        rows = []
        for label, message in [("echo turn", "hello world"), ("one tool call", '/call add {"a": 1, "b": 2}')]:
            asyncio.run(measure(surface, message, 50))  # warm up
            samples = asyncio.run(measure(surface, message, args.turns))
            ordered = sorted(samples)
            rows.append(
                (
                    label,
                    statistics.median(samples) * 1e6,
                    ordered[int(len(ordered) * 0.99) - 1] * 1e6,
                    len(samples) / sum(samples),
                )
            )
    print(f"{'turn':<16} {'p50 µs':>10} {'p99 µs':>10} {'turns/s':>10}")
    for label, p50, p99, rate in rows:
        print(f"{label:<16} {p50:>10.0f} {p99:>10.0f} {rate:>10.0f}")


if __name__ == "__main__":
    main()
