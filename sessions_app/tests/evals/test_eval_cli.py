"""``manage.py agent eval``: in-process runs (exit codes, --json, a JUnit report a
parser accepts), every example agent's evals and ``--url`` through a live daphne and worker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from agent_platform.tests.daphne import serve_live
from agent_platform.tests.factories import issue_token

ROOT = Path(__file__).resolve().parents[3]
JUDGE = ROOT / "sessions_app/tests/agent_trees/judge"


def agent_eval(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "agent", "eval", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_in_process_statuses_json_and_junit(tmp_path):
    report = tmp_path / "reports/evals.xml"
    done = agent_eval("--dir", str(JUDGE), "--tag", "smoke", "--tag", "bad", "--json", "--junit", str(report))
    assert done.returncode == 1, done.stderr
    snapshot = json.loads(done.stdout)
    statuses = {case["id"]: case["status"] for case in snapshot["cases"]}
    assert statuses == {
        "bad/boom": "error",
        "bad/flaky": "flaky",
        "bad/slow": "timeout",
        "bad/wrong": "failed",
        "ok/echo": "passed",
        "ok/tool": "passed",
    }
    # One progress line per case on stderr.
    assert sum(f" {case_id}" in done.stderr for case_id in statuses) == 6
    # A JUnit parser reads the report: one testcase per case, a failure for each that did not pass.
    (suite,) = JUnitXml.fromfile(str(report))
    cases = {case.name: case for case in suite}
    assert set(cases) == set(statuses) and suite.tests == 6
    failing = {name: case.result[0].type for name, case in cases.items() if case.result}
    assert failing == {"bad/boom": "error", "bad/flaky": "flaky", "bad/slow": "timeout", "bad/wrong": "failed"}
    assert all(isinstance(case.result[0], Failure) for name, case in cases.items() if name in failing)


@pytest.mark.parametrize("example", ["weather", "triage", "support"])
def test_every_example_agents_evals_pass(example):
    passing = agent_eval("--dir", str(ROOT / "examples" / example))
    assert passing.returncode == 0, passing.stderr
    assert "passed" in passing.stderr and "0 passed" not in passing.stderr


def test_exit_codes_nothing_matches_and_usage():
    assert agent_eval("--dir", str(JUDGE), "--filter", "nope").returncode == 2
    assert agent_eval("--dir", str(JUDGE), "--filter", "ok/echo", "--tag", "bad").returncode == 2
    assert agent_eval("--dir", str(JUDGE), "--token", "t").returncode == 2
    assert agent_eval("--dir", str(JUDGE), "--filter", "ok/echo", "--filter", "ok/tool").returncode == 0
    # Its one case passes only when its turn runs on the evals config's model.
    assert agent_eval("--dir", str(JUDGE.parent / "pickmodel")).returncode == 0


@pytest.fixture
def server(celery_worker_process, live_agents_dir, live, tmp_path_factory):
    yield from serve_live(tmp_path_factory, celery_worker_process, live_agents_dir, "/judge/v1/health")


def test_url_mode_runs_through_the_routes(server, alice, tmp_path):
    token = issue_token(alice)
    report = tmp_path / "evals.xml"
    args = ["judge", "--url", server.url, "--token", token]
    done = agent_eval(*args, "--tag", "smoke", "--json", "--junit", str(report))
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(done.stdout)
    assert snapshot["runId"].startswith("evr_") and snapshot["status"] == "completed"
    assert [case["id"] for case in snapshot["cases"]] == ["ok/echo", "ok/tool"]
    assert [case.name for suite in JUnitXml.fromfile(str(report)) for case in suite] == ["ok/echo", "ok/tool"]
    assert agent_eval(*args, "--filter", "bad/wrong").returncode == 1
    assert agent_eval(*args, "--filter", "nope").returncode == 2
    assert agent_eval("judge", "--url", server.url, "--token", "wrong").returncode == 2
