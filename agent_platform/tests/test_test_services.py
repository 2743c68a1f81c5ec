"""``make test`` on a machine where nothing answers: scripts/test_services.py starts a
throwaway Postgres and Redis of its own, runs the tests on them, and removes them."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "test_services.py"
# Port 1 on loopback: nothing listens there, the connection is refused at once.
NOTHING_DATABASE = "postgres://postgres@127.0.0.1:1/agent_platform"
NOTHING_REDIS = "redis://127.0.0.1:1/0"
# One real turn: the API on the throwaway Postgres, a live Celery worker on the throwaway Redis.
TINY_SELECTION = "sessions_app/tests/test_session_flow.py::test_an_echo_turn_runs_on_the_worker_and_the_session_waits"

pytestmark = pytest.mark.slow

needs_servers = pytest.mark.skipif(
    not (shutil.which("redis-server") and (Path("/usr/lib/postgresql").exists() or shutil.which("pg_ctl"))),
    reason="needs the PostgreSQL and Redis server binaries",
)


def started_urls(stderr: str) -> list[str]:
    return re.findall(r"started a throwaway one: (\S+)", stderr)


def folder_of(stderr: str) -> Path:
    found = re.search(r"\(in (/\S+)\)", stderr)
    assert found, stderr
    return Path(found.group(1))


def answers(url: str) -> bool:
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def assert_gone(stderr: str) -> None:
    urls = started_urls(stderr)
    assert len(urls) == 2, stderr
    assert not [url for url in urls if answers(url)]
    assert not folder_of(stderr).exists()
    assert "throwaway servers stopped and removed" in stderr


def make_test(database_url: str, redis_url: str, pytest_args: str) -> list[str]:
    """``make test`` as the README gives it, with this interpreter (no install step)."""
    if not shutil.which("make"):
        pytest.skip("needs make")
    return [
        "make",
        "--no-print-directory",
        "-o",
        ".venv/.dev-installed",
        "test",
        f"PY={sys.executable}",
        f"TEST_DATABASE_URL={database_url}",
        f"TEST_REDIS_URL={redis_url}",
        f"PYTEST_ARGS={pytest_args}",
    ]


@needs_servers
@pytest.mark.timeout(400)
def test_make_test_runs_on_throwaway_servers_when_nothing_answers_and_removes_them():
    ran = subprocess.run(
        make_test(NOTHING_DATABASE, NOTHING_REDIS, f"-q -p no:cacheprovider {TINY_SELECTION}"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=360,
    )
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output
    assert "1 passed" in ran.stdout
    database, cache = started_urls(ran.stderr)
    assert re.fullmatch(r"postgres://postgres@127\.0\.0\.1:\d+/agent_platform", database)
    assert re.fullmatch(r"redis://127\.0\.0\.1:\d+/0", cache)
    assert_gone(ran.stderr)


@needs_servers
@pytest.mark.timeout(200)
def test_ctrl_c_during_the_run_still_stops_and_removes_the_throwaway_servers():
    # A session of its own: the SIGINT goes to its whole process group, as a terminal's Ctrl-C does.
    run = subprocess.Popen(
        make_test(NOTHING_DATABASE, NOTHING_REDIS, f"-q -p no:cacheprovider {TINY_SELECTION}"),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert run.stderr is not None
    seen = ""
    try:
        while "started a throwaway one: redis" not in seen:
            line = run.stderr.readline()
            assert line, f"the run ended before its servers were up:\n{seen}"
            seen += line
        os.killpg(run.pid, signal.SIGINT)
        seen += run.stderr.read()
        status = run.wait(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        run.stderr.close()
    assert status != 0
    assert_gone(seen)


def test_servers_that_answer_are_used_as_they_are():
    """The suite's own servers answer (this very run uses them): nothing is started."""
    shown = subprocess.run(
        [sys.executable, str(SCRIPT), sys.executable, "-c", "import os; print(os.environ['DATABASE_URL'])"],
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == os.environ["DATABASE_URL"]
    assert "throwaway" not in shown.stderr


@needs_servers
def test_a_server_that_refuses_the_login_is_replaced_like_one_that_does_not_answer(tmp_path):
    """No reliance on the machine's own auth set-up: a server that answers but will not
    let this URL in (here: a role it does not have) gets a throwaway server in its place."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("needs the suite's Postgres")
    refused = re.sub(r"//[^@/]*@", "//no_such_role@", os.environ["DATABASE_URL"])
    marker = tmp_path / "ran"
    shown = subprocess.run(
        [sys.executable, str(SCRIPT), sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
        env={**os.environ, "DATABASE_URL": refused},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert 'role "no_such_role" does not exist' in shown.stderr
    assert len(started_urls(shown.stderr)) == 1
    assert marker.exists()


def test_missing_server_binaries_name_the_packages_and_run_nothing(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    marker = tmp_path / "ran"
    ran = subprocess.run(
        [sys.executable, str(SCRIPT), sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
        env={
            **os.environ,
            "PATH": str(empty),
            "PG_BINDIR": str(empty),
            "DATABASE_URL": NOTHING_DATABASE,
            "REDIS_URL": NOTHING_REDIS,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 1
    assert "apt-get install postgresql" in ran.stderr
    assert "apt-get install redis-server" in ran.stderr
    assert NOTHING_DATABASE in ran.stderr
    assert not marker.exists()
