"""How the Postgres connection pool checks a connection before handing it out.

psycopg_pool's own check sends an empty query, a round trip to the server, every time a
request, a stream read or a task borrows a connection: several times per turn, paid by
this process and by Postgres. ``check_connection`` asks the socket first. A connection
the server has closed (a restart, a crash, ``pg_terminate_backend``) has something to
read on it, the server's last message or the end of the stream, while a healthy idle
connection has nothing; only then is the round trip made, and it raises for a dead
connection, so the pool throws it away and hands out another (RELIABILITY.md row 5).
"""

from __future__ import annotations

import select
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

_READABLE = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP


def check_connection(conn: psycopg.Connection[Any]) -> None:
    """The ``check`` of the pool (``OPTIONS["pool"]["check"]`` in the settings).

    Raises:
        psycopg.OperationalError: the connection is closed or does not answer.
    """
    if conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    poller = select.poll()  # not select(): descriptors above 1023 are common with many streams
    poller.register(conn.fileno(), _READABLE)
    if poller.poll(0):
        ConnectionPool.check_connection(conn)
