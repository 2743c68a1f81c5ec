"""The price of row-level security per request: the same requests against two daphnes on
one database, one connected as the tables' owner (``postgres``: a superuser, whom RLS
does not bind) and one as the application role (``manage.py migrate`` with
``DATABASE_MIGRATE_URL`` makes it, as a deployment does), taking turns request by request
so that both see the same machine. The difference is what the policies and the scope's
``set_config`` round trips cost (docs/rls.md).
"""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

from harness import PYTHON, Api, Processes, free_port, manage, wait_healthy
from table import Row, ms
from turns import AGENT, Stack, sessions

PASSWORD = "bench-rls-only"  # noqa: S105  (a throwaway role of a throwaway database)


def _app_role(stack: Stack) -> tuple[str, str]:
    """(role, DATABASE_URL) of an application role of the bench database, made by migrate."""
    role = f"bench_app_{uuid.uuid4().hex[:8]}"
    url = f"postgres://{role}:{PASSWORD}@127.0.0.1:5432/{stack.database}"
    manage(["migrate", "--noinput"], {**stack.env, "DATABASE_URL": url, "DATABASE_MIGRATE_URL": stack.database_url})
    return role, url


def _drop_role(stack: Stack, role: str) -> None:
    import psycopg

    with psycopg.connect(stack.database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [role])
        conn.execute(f'DROP OWNED BY "{role}"')
        conn.execute(f'DROP ROLE "{role}"')


def _timed(api: Api, method: str, path: str, status: int, body: Any = None) -> float:
    sent = time.perf_counter()
    api.expect(status, method, path, body)
    return ms(time.perf_counter() - sent)


def bench_rls(processes: Processes, stack: Stack, requests: int) -> list[Row]:
    role, url = _app_role(stack)
    port = free_port()
    web = processes.start(
        "daphne-app-role",
        [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"],
        {**stack.env, "DATABASE_URL": url},
    )
    try:
        wait_healthy(port, web)
        owner, app = stack.api(), Api(port, stack.token)
        try:
            session_id = owner.expect(201, "POST", sessions(AGENT), {"message": "hello"})["sessionId"]
            checks = [
                ("GET /api/v1/me", "GET", "/api/v1/me", 200, None),
                ("GET session state", "GET", f"{sessions(AGENT)}/{session_id}", 200, None),
                ("GET session events", "GET", f"{sessions(AGENT)}/{session_id}/events", 200, None),
                ("GET sessions list", "GET", f"/{AGENT}/v1/sessions", 200, None),
                ("POST session (201)", "POST", sessions(AGENT), 201, {"message": "hello", "dryRun": True}),
            ]
            rows = []
            for name, method, path, status, body in checks:
                for api in (owner, app):  # warm both: connections, prepared statements
                    for _ in range(10):
                        _timed(api, method, path, status, body)
                as_owner, as_app = [], []
                for _ in range(requests):
                    as_owner.append(_timed(owner, method, path, status, body))
                    as_app.append(_timed(app, method, path, status, body))
                off, on = statistics.median(as_owner), statistics.median(as_app)
                rows += [
                    Row(f"rls: {name} p50, RLS off (owner)", off, "ms"),
                    Row(f"rls: {name} p50, RLS on (app role)", on, "ms"),
                    Row(f"rls: {name} p50, cost of RLS", on - off, "ms"),
                ]
            return rows
        finally:
            owner.close()
            app.close()
    finally:
        processes.stop(web)
        _drop_role(stack, role)
