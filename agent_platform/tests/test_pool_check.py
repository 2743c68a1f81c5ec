"""The pool's check: no round trip for a healthy idle connection, a refusal for one the
server has closed (so the pool hands out another)."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection

from agent_platform.pool import check_connection

pytestmark = pytest.mark.postgres


@pytest.fixture
def idle_connection(db):
    if connection.vendor != "postgresql":
        pytest.skip("the pool is Postgres's")
    conn = _connect()
    yield conn
    conn.close()


def _connect() -> psycopg.Connection:
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"], port=settings["PORT"], user=settings["USER"], dbname=settings["NAME"], autocommit=True
    )


def _sends_nothing(conn: psycopg.Connection) -> None:
    """Fail if the check talks to the server."""

    def execute(*args, **kwargs):
        raise AssertionError("the check made a round trip")

    conn.execute = execute  # type: ignore[method-assign]


def test_a_healthy_idle_connection_passes_without_a_round_trip(idle_connection):
    _sends_nothing(idle_connection)
    check_connection(idle_connection)


def test_a_connection_whose_backend_was_terminated_is_refused(idle_connection):
    pid = idle_connection.info.backend_pid
    with _connect() as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the server's goodbye reaches the socket at once, give or take
        try:
            check_connection(idle_connection)
        except psycopg.OperationalError:
            return
        time.sleep(0.01)
    pytest.fail("a terminated connection passed the check")


def test_a_closed_connection_is_refused(idle_connection):
    idle_connection.close()
    with pytest.raises(psycopg.OperationalError):
        check_connection(idle_connection)


@pytest.mark.django_db(transaction=True)
def test_after_the_server_closed_every_pooled_connection_the_next_query_still_works():
    if connection.vendor != "postgresql" or connection.pool is None:
        pytest.skip("the pool is Postgres's")
    # A pool of its own: connections that earlier tests' threads in this process still
    # hold (the suite's other files run here first) would be counted against its size.
    connection.close_pool()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    connection.close()  # back to the pool
    with _connect() as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
    time.sleep(0.2)  # the goodbyes reach the pooled sockets
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
