"""A deployed agent's eval cases run in its sandbox, through ``/<slug>/v1/dev/evals`` on
the live worker: ``t.send`` runs real eval sessions, gates and matchers are judged in the
runner, each status comes out as for an agent of the platform's folder, and the case's
``t`` offers the runner nothing but sending turns and recording gates."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

TOOL = '''
from agents.sdk import ToolContext, tool


@tool
async def add(ctx: ToolContext, a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''

CASES = {
    # The case checks it runs where tenant code runs: no Django, the sandbox's own user.
    "evals/ok/tool.eval.py": """
import os
import sys

from agents.sdk import define_eval
from agents.sdk.evals import equals, matches


async def test(t):
    turn = await t.send('/call add {"a": 2, "b": 3}')
    turn.expect_ok()
    t.called("add", times=1, args={"a": 2, "b": matches("^3$")})
    t.check(turn.tool_calls[0]["output"], lambda output: output == 5)
    t.check("django" in sys.modules, equals(False))
    second = await t.send("again")
    assert second.index == 1 and t.session_id == turn.session_id and len(t.turns) == 2
    t.check(t.reply, equals("echo: again"))
    t.succeeded()


case = define_eval(test=test, tags=["ok"])
""",
    "evals/bad/wrong.eval.py": """
from agents.sdk import define_eval
from agents.sdk.evals import equals


async def test(t):
    await t.send("hello")
    t.check(t.reply, equals("not what it says"))
    t.called("add")


case = define_eval(test=test, tags=["bad"])
""",
    # A gate passed before the raise is kept: gates reach the platform as they are made.
    "evals/bad/boom.eval.py": """
from agents.sdk import define_eval


async def test(t):
    await t.send("hello")
    t.succeeded()
    raise RuntimeError("the case itself broke")


case = define_eval(test=test, tags=["bad"])
""",
    "evals/bad/slow.eval.py": """
from agents.sdk import define_eval


async def test(t):
    await t.send("hello")
    t.succeeded()
    await t.send("/sleep 20")


case = define_eval(test=test, tags=["bad"], timeout=2)
""",
    # Tenant code holding its t's runner asks the platform for what t does not offer.
    "evals/bad/reach.eval.py": """
from agents.sdk import define_eval


async def test(t):
    t._runner.host_call(t._call, "kv.get", ("key",), {})


case = define_eval(test=test, tags=["bad"])
""",
    # Gates are data from tenant code: the result keeps a bounded number, failures first.
    "evals/bad/many.eval.py": """
from agents.sdk import define_eval


async def test(t):
    for n in range(1200):
        t.check(n, lambda value: True)
    t.check("x" * 100_000, lambda value: False)


case = define_eval(test=test, tags=["bad"])
""",
}

TREE = {
    "agent/instructions.md": "A deployed agent with evals.",
    "agent/tools/add.py": TOOL,
    "evals/evals.config.py": (
        "from agents.sdk import define_evals_config\n\nconfig = define_evals_config(max_concurrency=3)\n"
    ),
    **CASES,
}


def _wait_done(client, root: str, run_id: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        snapshot = client.get(f"{root}/runs/{run_id}").json()
        if snapshot["status"] != "running":
            return snapshot
        assert time.monotonic() < deadline, snapshot
        time.sleep(0.2)


def test_a_deployed_agents_cases_run_in_its_sandbox_with_every_status(live, alice, deployed):
    slug = deployed(alice, TREE)
    client = live(alice, slug).client
    root = f"/{slug}/v1/dev/evals"
    listed = client.get(root).json()
    assert {d["id"] for d in listed["datapoints"]} == {
        "ok/tool",
        "bad/wrong",
        "bad/boom",
        "bad/slow",
        "bad/reach",
        "bad/many",
    }

    started = client.post(f"{root}/runs", {}, format="json")
    assert started.status_code == 202, started.content
    snapshot = _wait_done(client, root, started.json()["runId"])

    assert snapshot["status"] == "completed", (snapshot["error"], snapshot["cases"])
    cases = {case["id"]: case for case in snapshot["cases"]}
    assert {case_id: case["status"] for case_id, case in cases.items()} == {
        "ok/tool": "passed",
        "bad/wrong": "failed",
        "bad/boom": "error",
        "bad/slow": "timeout",
        "bad/reach": "error",
        "bad/many": "failed",
    }, snapshot
    tool = cases["ok/tool"]
    assert [a["gate"] for a in tool["assertions"]] == ["called", "check", "check", "check", "succeeded"]
    assert all(a["ok"] for a in tool["assertions"]), tool["assertions"]
    assert [a["ok"] for a in cases["bad/wrong"]["assertions"]] == [False, False]
    assert "the case itself broke" in cases["bad/boom"]["error"]
    assert [a["gate"] for a in cases["bad/boom"]["assertions"]] == ["succeeded"]
    assert [a["gate"] for a in cases["bad/slow"]["assertions"]] == ["succeeded"]
    assert "not offered to an eval case" in cases["bad/reach"]["error"]
    many = cases["bad/many"]["assertions"]
    assert len(many) == 501 and many[-1]["ok"] is False and len(many[-1]["message"]) <= 1000

    # The case's session is a real eval session of the deployed agent, its turns in the log.
    [session_id] = tool["sessionIds"]
    events = client.get(f"/{slug}/v1/session/{session_id}/events").json()["events"]
    assert [e["type"] for e in events].count("turn.completed") == 2
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [r["output"] for r in results] == [5]
