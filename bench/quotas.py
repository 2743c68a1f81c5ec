"""``quotas``: the per-request cost of the quota checks, for ``bench/run.py``.

A second daphne runs beside the suite's, the same in everything but ``PLATFORM_QUOTAS=0``
(same database, Redis and worker). New sessions (create + turn, followed on the NDJSON
stream to ``turn.completed``) alternate between the two, so drift in the machine's load
reaches both alike. With quotas on, a create takes the tenant's row lock and counts its
unended turns and its sessions of the last minute (two statements), and opening the
stream takes a place in the tenant's open-streams set in Redis (one Lua script) and
gives it back when it closes.
"""

from __future__ import annotations

import statistics

from harness import PYTHON, Api, Processes, free_port, wait_healthy
from table import Row, ms
from turns import Stack, timed_turn

WARM_UP = 5


def bench_quotas(processes: Processes, stack: Stack, sessions: int) -> list[Row]:
    port = free_port()
    argv = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"]
    web = processes.start("daphne-quotas-off", argv, {**stack.env, "PLATFORM_QUOTAS": "0"})
    wait_healthy(port, web)
    apis = {"on": stack.api(), "off": Api(port, stack.token)}
    totals: dict[str, list[float]] = {"on": [], "off": []}
    posts: dict[str, list[float]] = {"on": [], "off": []}
    opens: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for _ in range(WARM_UP):  # the new daphne's first requests discover the agent, look the token up
            timed_turn(apis["off"], "hello", settle=True)
        for _ in range(sessions):
            for mode, api in apis.items():
                timing, _session = timed_turn(api, "hello", settle=True)
                totals[mode].append(ms(timing.total))
                posts[mode].append(ms(timing.post))
                opens[mode].append(ms(timing.open))
    finally:
        for api in apis.values():
            api.close()
        processes.stop(web)
    total, post, open_ = (
        {mode: statistics.median(values) for mode, values in measured.items()} for measured in (totals, posts, opens)
    )
    return [
        Row("quotas: create+turn, POST -> turn.completed p50, quotas off", total["off"], "ms"),
        Row("quotas: create+turn, POST -> turn.completed p50, quotas on", total["on"], "ms"),
        Row("quotas: POST /v1/session -> 201 p50, quotas off", post["off"], "ms"),
        Row("quotas: POST /v1/session -> 201 p50, quotas on", post["on"], "ms"),
        Row("quotas: stream opened p50, quotas off", open_["off"], "ms"),
        Row("quotas: stream opened p50, quotas on", open_["on"], "ms"),
        Row("quotas: cost of the checks per create (difference of p50s)", post["on"] - post["off"], "ms", 5, "lower"),
        Row("quotas: cost of the stream's place (difference of p50s)", open_["on"] - open_["off"], "ms", 5, "lower"),
    ]
