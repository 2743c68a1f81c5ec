"""Discovery time for a generated agent: 200 tools, 50 skills, 20 hooks.

    .venv/bin/python bench/discovery.py [--tools 200] [--skills 50] [--hooks 20] [--repeat 5]

Rows:
- cold discovery: a fresh interpreter imports the SDK and discovers the tree once
  (``agent validate`` in a new process pays this);
- warm discovery: discovering again in the same process (new modules, compiled bytecode cached);
- dev-mode check: what a request pays in dev mode when nothing changed (the tree's fingerprint);
- cached lookup: what a request pays outside dev mode.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOOL = '''from typing import Literal

from agents.sdk import ToolContext, tool


@tool(effect="read")
def tool_{n}(ctx: ToolContext, city: str, days: int = 3, units: Literal["c", "f"] = "c") -> dict:
    """Tool number {n}: look something up.

    Args:
        city: Where.
        days: How many days.
    """
    return {{"n": {n}}}
'''
SKILL = "---\ndescription: Skill number {n}\n---\nStep one. Step two.\n"
HOOK = """from agents.sdk import define_hook


def handle(event, ctx):
    return None


hook = define_hook(events={{"turn.completed": handle}})
"""


def generate(folder: Path, tools: int, skills: int, hooks: int) -> None:
    agent = folder / "agent"
    for sub in ("tools", "skills", "hooks"):
        (agent / sub).mkdir(parents=True)
    (agent / "instructions.md").write_text("Benchmark agent.")
    for n in range(tools):
        (agent / "tools" / f"tool_{n}.py").write_text(TOOL.format(n=n))
    for n in range(skills):
        (agent / "skills" / f"skill_{n}.md").write_text(SKILL.format(n=n))
    for n in range(hooks):
        (agent / "hooks" / f"hook_{n}.py").write_text(HOOK.format(n=n))


def timed(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=200)
    parser.add_argument("--skills", type=int, default=50)
    parser.add_argument("--hooks", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "big"
        generate(folder, args.tools, args.skills, args.hooks)
        probe = (
            "import time; t = time.perf_counter(); from pathlib import Path; "
            "from agents.discovery import discover; "
            f"s, _ = discover(Path({str(folder)!r})); "
            "assert not s.all_diagnostics(), s.all_diagnostics(); print(time.perf_counter() - t)"
        )
        cold = []
        for _ in range(args.repeat):
            result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
            cold.append(float(result.stdout))

        from agents.discovery import discover, tree_fingerprint

        def rediscover() -> None:
            surface, loader = discover(folder)
            assert len(surface.tools) == args.tools
            loader.unload()

        warm = timed(rediscover, args.repeat)
        fingerprint = timed(lambda: tree_fingerprint(folder), args.repeat * 4)
        cache: dict[str, object] = {str(folder): object()}
        lookup = timed(lambda: cache[str(folder)], 1000)

    print(f"agent: {args.tools} tools, {args.skills} skills, {args.hooks} hooks (median of {args.repeat})")
    print(f"{'measure':<40} {'ms':>10}")
    print(f"{'cold discovery (fresh interpreter)':<40} {statistics.median(cold) * 1000:>10.1f}")
    print(f"{'warm discovery (same process)':<40} {warm * 1000:>10.1f}")
    print(f"{'dev-mode check (tree fingerprint)':<40} {fingerprint * 1000:>10.2f}")
    print(f"{'cached lookup (outside dev mode)':<40} {lookup * 1000:>10.4f}")


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
    main()
