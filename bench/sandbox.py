"""A sandboxed tool call against an in-process one: the weather example's ``get_weather``
run through ``run_server_tool`` (what a turn does for each call), once from the in-process
surface and once from the surface discovered in the sandbox (``agents.sandbox``).

    .venv/bin/python bench/sandbox.py [--calls 500] [--cold 5]

Prints ``name p50_ms p99_ms`` lines: the in-process call, the warm sandboxed call (its
runner already started), the cold one (a new runner per call: bwrap, Python, the tree's
imports, then the call), and ``overhead_p50_ms`` (warm minus in-process).
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


async def timed(tool: Any, ctx: Any, calls: int) -> list[float]:
    from agents.runtime.tool_calls import run_server_tool, validate_arguments

    arguments = validate_arguments(tool, {"city": "Oslo"})
    assert isinstance(arguments, dict)
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        result = await run_server_tool(tool, arguments, ctx)
        samples.append((time.perf_counter() - began) * 1000)
        assert not result.is_error, result
    return samples


def p99(samples: list[float]) -> float:
    return sorted(samples)[min(len(samples) - 1, int(len(samples) * 0.99))]


async def main(calls: int, cold: int) -> None:
    from agents.discovery import discover
    from agents.sandbox import sandboxed_surface
    from agents.sdk import SessionInfo, ToolContext

    folder = ROOT / "examples" / "weather"
    ctx = ToolContext(session=SessionInfo(id="ses_bench", agent="weather"))
    local, _ = discover(folder)
    inprocess = await timed(local.tools["get_weather"].value, ctx, calls)
    sandboxed, loader = sandboxed_surface(folder, "weather")
    await timed(sandboxed.tools["get_weather"].value, ctx, 20)  # warm-up
    warm = await timed(sandboxed.tools["get_weather"].value, ctx, calls)
    loader.unload()
    starts = []
    for _ in range(cold):
        began = time.perf_counter()
        surface, loader = sandboxed_surface(folder, "weather")  # a new pool: a new runner
        await timed(surface.tools["get_weather"].value, ctx, 1)
        starts.append((time.perf_counter() - began) * 1000)
        loader.unload()
    print("name p50_ms p99_ms")
    for name, samples in (("in_process", inprocess), ("sandboxed_warm", warm), ("sandboxed_cold", starts)):
        print(f"{name} {statistics.median(samples):.3f} {p99(samples):.3f}")
    print(f"overhead_p50_ms {statistics.median(warm) - statistics.median(inprocess):.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--cold", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.cold))
