"""``ab``: the cost of A/B assignment per session (issue 16), for ``bench/run.py``.

Two agents are generated into the run's temporary AGENTS_DIR, the same but for one file:
``abplain`` (instructions only) and ``abexp`` (plus ``ab/tone.py``: two arms with
instructions and a ``metrics`` function). New sessions alternate between them (so drift
in the machine's load reaches both alike), each timed from ``POST /v1/session`` to its
``turn.completed`` read on the stream, as the turn-overhead benchmark times them.

What assignment adds is in the creation request (one arm drawn, one row inserted, one
more event in the first append), in the turn (the arm's instructions read with the
session), and after it on the worker (the sample: ``metrics(sample)`` and one update),
which the next session's timing can feel only on a busy worker.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from table import Row, ms
from turns import Stack, timed_turn

PLAIN, EXPERIMENT = "abplain", "abexp"

TONE = """from agents.sdk import define_ab


def metrics(sample):
    return {"turns": sample["turns"], "toolCalls": sample["toolCalls"]}


experiment = define_ab(
    arms=["warm", "concise"],
    instructions={"warm": "Be warm and personal.", "concise": "Be short and to the point."},
    metrics=metrics,
)
"""


def write_ab_agents(agents_dir: Path) -> None:
    for slug in (PLAIN, EXPERIMENT):
        (agents_dir / slug / "agent").mkdir(parents=True)
        (agents_dir / slug / "agent" / "instructions.md").write_text("You answer briefly.\n")
    (agents_dir / EXPERIMENT / "agent" / "ab").mkdir()
    (agents_dir / EXPERIMENT / "agent" / "ab" / "tone.py").write_text(TONE)


def bench_ab(stack: Stack, sessions: int) -> list[Row]:
    """``sessions`` new sessions of each agent, alternating; p50s and their differences."""
    api = stack.api()
    totals: dict[str, list[float]] = {PLAIN: [], EXPERIMENT: []}
    posts: dict[str, list[float]] = {PLAIN: [], EXPERIMENT: []}
    try:
        for _ in range(sessions):
            for agent in (PLAIN, EXPERIMENT):
                timing, session_id = timed_turn(api, "hello", settle=True, agent=agent)
                totals[agent].append(ms(timing.total))
                posts[agent].append(ms(timing.post))
                stack.left_idle(session_id, agent)
    finally:
        api.close()
    p50 = {agent: statistics.median(values) for agent, values in totals.items()}
    post = {agent: statistics.median(values) for agent, values in posts.items()}
    return [
        Row("ab: session without an experiment, POST -> turn.completed p50", p50[PLAIN], "ms"),
        Row("ab: session with an experiment, POST -> turn.completed p50", p50[EXPERIMENT], "ms"),
        Row("ab: assignment cost per session (difference of p50s)", p50[EXPERIMENT] - p50[PLAIN], "ms", 2, "lower"),
        Row("ab: POST /v1/session -> 201 p50 without an experiment", post[PLAIN], "ms"),
        Row("ab: POST /v1/session -> 201 p50 with an experiment", post[EXPERIMENT], "ms"),
    ]
