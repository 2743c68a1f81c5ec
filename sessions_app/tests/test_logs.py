"""Server log lines in the database (sessions_app.logs) and ``GET /<slug>/v1/logs``."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection, transaction
from rest_framework.test import APIClient

from agent_platform.tests.outage import database_unreachable
from agents.registry import get_agent
from agents.tests.trees import INSTRUCTIONS, write_tree
from sessions_app.logs import DatabaseLogHandler
from sessions_app.models import LogLine

pytestmark = pytest.mark.django_db

# A child of the "sessions_app" logger, which LOGGING sends to the database handler.
log = logging.getLogger("sessions_app.tests.logs")

# The loggers these tests write to. Lines of others are not theirs to count: a thread of
# an earlier test (a sandbox runner's output reader, say) may store one at any moment.
LOGGERS = (
    log.name,
    "agent_platform.hooks",
    "agent_platform.auth",
    "agents.registry",
    "django.db.backends",
    "django.db.backends.schema",
    "sessions_app.logs",
)


def ours():
    return LogLine.objects.filter(logger__in=LOGGERS)


@pytest.fixture
def ledger(tmp_path: Path, settings):
    """Two shared agents, ``ledger`` and ``other``, in a fresh AGENTS_DIR."""
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    for slug in ("ledger", "other"):
        write_tree(tmp_path / slug, INSTRUCTIONS)
    return get_agent("ledger")


def messages(response) -> list[str]:
    return [line["message"] for line in response.json()["lines"]]


def test_a_record_is_stored_with_its_tags(alice):
    log.warning(
        "quota at %d%%", 90, extra={"tenant_id": alice.tenant_id, "agent_slug": "ledger", "session_id": "ses_1"}
    )
    line = ours().get()
    assert (line.level, line.logger, line.message) == ("WARNING", "sessions_app.tests.logs", "quota at 90%")
    assert (line.tenant_id, line.agent_slug, line.session_id) == (alice.tenant_id, "ledger", "ses_1")


def test_the_hooks_and_agents_loggers_are_stored_and_debug_is_not():
    logging.getLogger("agent_platform.hooks").error("a hook failed")
    logging.getLogger("agents.registry").info("an agent was discovered")
    logging.getLogger("agents.registry").debug("too chatty to keep")
    logging.getLogger("agent_platform.auth").warning("not an agent's business")
    assert sorted(ours().values_list("logger", "message")) == [
        ("agent_platform.hooks", "a hook failed"),
        ("agents.registry", "an agent was discovered"),
    ]


def test_a_traceback_is_kept_with_the_message():
    try:
        raise ValueError("bad input")
    except ValueError:
        log.exception("the tool failed")
    message = ours().get().message
    assert message.startswith("the tool failed\nTraceback")
    assert "ValueError: bad input" in message


def test_database_and_own_records_are_never_stored():
    handler = DatabaseLogHandler()
    for name in ("django.db.backends", "django.db.backends.schema", "sessions_app.logs"):
        handler.handle(logging.LogRecord(name, logging.ERROR, __file__, 1, "query", None, None))
    assert not ours().exists()


def test_a_failed_transaction_is_left_alone_and_the_caller_is_not_disturbed():
    with transaction.atomic():
        transaction.set_rollback(True)
        log.error("inside a transaction that will roll back")
    assert not ours().exists()


@pytest.mark.django_db(transaction=True)
def test_a_record_is_dropped_not_raised_while_the_database_is_down():
    with database_unreachable():
        log.error("the database is gone")  # must not raise
    assert not ours().exists()


@pytest.mark.django_db(transaction=True)
def test_a_record_logged_on_an_event_loop_is_written_by_a_thread():
    async def handler() -> None:
        log.warning("from a coroutine", extra={"agent_slug": "ledger"})

    asyncio.run(handler())
    deadline = time.monotonic() + 10
    while not ours().exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(ours().values_list("message", "agent_slug")) == [("from a coroutine", "ledger")]


@pytest.mark.django_db(transaction=True)
def test_lines_from_coroutines_wait_for_a_slow_database_rather_than_being_dropped():
    async def chatty(n: int) -> None:
        await asyncio.sleep(0)
        for i in range(50):
            log.warning("line %d of coroutine %d", i, n, extra={"agent_slug": "ledger"})

    async def main() -> None:
        await asyncio.gather(*(chatty(n) for n in range(10)))

    # Writes block on the table for a second: every writer is busy while the 500 lines come.
    with psycopg.connect(**connection.get_connection_params()) as blocker:
        blocker.execute(f"LOCK TABLE {LogLine._meta.db_table} IN EXCLUSIVE MODE")
        asyncio.run(main())
        time.sleep(1)
    deadline = time.monotonic() + 30
    while ours().count() < 500 and time.monotonic() < deadline:
        time.sleep(0.05)
    stored = set(ours().values_list("message", flat=True))
    assert stored == {f"line {i} of coroutine {n}" for i in range(50) for n in range(10)}


@pytest.mark.django_db(transaction=True)
def test_threads_that_log_give_their_connection_back_so_more_of_them_than_the_pool_lose_nothing():
    """A worker's plain tool functions run on threads that no request or task manages.
    Each of twenty such threads, more than the pool has connections, logs a line and stays
    alive: a connection borrowed for a line and kept would leave the last ones none."""
    pool_size = settings.DATABASES["default"]["OPTIONS"]["pool"]["max_size"]
    count = pool_size + 4
    logged, done = threading.Barrier(count + 1), threading.Event()

    def tool_thread(n: int) -> None:
        log.warning("line of thread %d", n)
        logged.wait()
        done.wait()  # alive, as a tool pool's thread stays

    threads = [threading.Thread(target=tool_thread, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    try:
        logged.wait(timeout=60)
        stored = set(ours().values_list("message", flat=True))
        assert stored == {f"line of thread {n}" for n in range(count)}
    finally:
        done.set()
        for thread in threads:
            thread.join()


# --- GET /<slug>/v1/logs ----------------------------------------------------------------------


def test_lines_are_read_on_from_the_cursor(ledger, alice, client_for):
    for n in range(5):
        log.info("line %d", n, extra={"tenant_id": alice.tenant_id, "agent_slug": "ledger"})
    client = client_for(alice)

    first = client.get("/ledger/v1/logs?limit=2").json()
    assert [line["message"] for line in first["lines"]] == ["line 0", "line 1"]
    assert first["next"] == first["lines"][-1]["id"]
    line = first["lines"][0]
    assert set(line) == {"id", "at", "level", "logger", "message", "sessionId", "requestId"}
    assert line["level"] == "INFO" and line["logger"] == "sessions_app.tests.logs" and line["sessionId"] is None
    assert line["at"].endswith("Z")

    rest = client.get(f"/ledger/v1/logs?after={first['next']}").json()
    assert [line["message"] for line in rest["lines"]] == ["line 2", "line 3", "line 4"]
    end = client.get(f"/ledger/v1/logs?after={rest['next']}").json()
    assert end == {"lines": [], "next": rest["next"]}


def test_another_tenant_never_sees_this_tenants_lines(ledger, alice, bob, mallory, client_for):
    acme, umbrella = alice.tenant_id, mallory.tenant_id
    log.error("acme secret", extra={"tenant_id": acme, "agent_slug": "ledger", "session_id": "ses_a"})
    log.error("umbrella secret", extra={"tenant_id": umbrella, "agent_slug": "ledger", "session_id": "ses_m"})
    log.warning("ledger platform line", extra={"agent_slug": "ledger"})
    log.warning("untenanted session line", extra={"agent_slug": "ledger", "session_id": "ses_x"})
    log.error("other agent's acme line", extra={"tenant_id": acme, "agent_slug": "other"})
    log.error("no agent at all", extra={"tenant_id": acme})

    assert messages(client_for(alice).get("/ledger/v1/logs")) == ["acme secret", "ledger platform line"]
    assert messages(client_for(bob).get("/ledger/v1/logs")) == ["acme secret", "ledger platform line"]
    assert messages(client_for(mallory).get("/ledger/v1/logs")) == ["umbrella secret", "ledger platform line"]
    assert messages(client_for(mallory).get("/other/v1/logs")) == []


@pytest.mark.parametrize("query", ["after=abc", "after=-1", "after=1.5", "limit=0", "limit=ten"])
def test_a_bad_cursor_or_limit_is_400(ledger, alice, client_for, query):
    response = client_for(alice).get(f"/ledger/v1/logs?{query}")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


def test_an_unknown_agent_is_404(ledger, alice, client_for):
    response = client_for(alice).get("/nobody/v1/logs")
    assert response.status_code == 404
    assert response.json()["error"] == "agent_not_found"


def test_logs_need_a_token(ledger):
    assert APIClient().get("/ledger/v1/logs").status_code == 401


def test_beats_sweeper_lines_are_debug_and_other_tasks_lines_stay_info(caplog):
    caplog.set_level(logging.DEBUG)
    logging.getLogger("celery.beat").info(
        "Scheduler: Sending due task %s (%s)", "sweep-turns", "sessions_app.tasks.sweep_turns"
    )
    logging.getLogger("celery.app.trace").info(
        "Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s",
        {"name": "sessions_app.tasks.sweep_turns", "id": "1", "runtime": 0.01, "return_value": 0},
    )
    logging.getLogger("celery.app.trace").info(
        "Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s",
        {"name": "sessions_app.tasks.run_queued_turn", "id": "2", "runtime": 0.5, "return_value": None},
    )
    assert [record.levelname for record in caplog.records] == ["DEBUG", "DEBUG", "INFO"]
