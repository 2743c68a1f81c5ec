"""The two Postgres roles of a deployment: the tables' owner, which migrations run as,
and the application role every process connects as (``DATABASE_URL``), which is neither
superuser nor ``BYPASSRLS``, so row-level security holds for it (``agent_platform.rls``).
"""

from __future__ import annotations

import dj_database_url
from django.core.management.base import CommandError
from django.db import connections
from psycopg import sql

from agent_platform.rls_sql import grant_statements


def connect_as(alias: str, url: str) -> None:
    """From now on in this process, database ``alias`` connects as ``url`` says."""
    connection = connections[alias]
    connection.close()
    close_pool = getattr(connection, "close_pool", None)
    if close_pool is not None and connection.settings_dict["OPTIONS"].get("pool"):
        close_pool()
    parsed = dj_database_url.parse(url)
    for key in ("NAME", "USER", "PASSWORD", "HOST", "PORT"):
        connection.settings_dict[key] = parsed[key]


def ensure_app_role(alias: str, app_url: str) -> str:
    """Create the role ``app_url`` logs in as (LOGIN NOSUPERUSER NOBYPASSRLS, its password)
    when it is missing, and grant it the tables, sequences and schema, now and for tables
    later migrations make. Run on a connection as the tables' owner; returns the role.

    Raises:
        CommandError: the role is the owner itself, or exists as a superuser or with
            BYPASSRLS (row-level security would not apply to it).
    """
    parsed = dj_database_url.parse(app_url)
    role, password = str(parsed["USER"]), str(parsed.get("PASSWORD") or "")
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, current_database()")
        owner, database = cursor.fetchone()
        if role == owner:
            raise CommandError(
                f"DATABASE_URL and DATABASE_MIGRATE_URL name the same role {role!r}: "
                "the application must connect as a role of its own (docs/rls.md)."
            )
        cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", [role])
        found = cursor.fetchone()
        raw = connection.connection
        name = sql.Identifier(role).as_string(raw)
        secret = f" PASSWORD {sql.Literal(password).as_string(raw)}" if password else ""
        if found is None:
            cursor.execute(f"CREATE ROLE {name} LOGIN NOSUPERUSER NOBYPASSRLS{secret}")
        elif found[0] or found[1]:
            raise CommandError(f"role {role!r} is a superuser or has BYPASSRLS: row-level security would not hold.")
        elif secret:
            cursor.execute(f"ALTER ROLE {name} WITH LOGIN{secret}")
        cursor.execute(f"GRANT CONNECT ON DATABASE {sql.Identifier(database).as_string(raw)} TO {name}")
        for statement in grant_statements(name, sql.Identifier(owner).as_string(raw)):
            cursor.execute(statement)
    return role


def drop_app_role(alias: str, role: str) -> None:
    """Take back what ``ensure_app_role`` granted ``role`` in this database and drop it
    (its sessions are ended first). Run as the owner; for throwaway roles (tests, bench)."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, current_database()")
        owner, database = cursor.fetchone()
        raw = connection.connection
        name, owner_name = sql.Identifier(role).as_string(raw), sql.Identifier(owner).as_string(raw)
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s AND pid <> pg_backend_pid()",
            [role],
        )
        for statement in [
            f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {name}",
            f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {name}",
            f"REVOKE ALL ON SCHEMA public FROM {name}",
            f"REVOKE ALL ON DATABASE {sql.Identifier(database).as_string(raw)} FROM {name}",
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner_name} IN SCHEMA public REVOKE ALL ON TABLES FROM {name}",
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner_name} IN SCHEMA public REVOKE ALL ON SEQUENCES FROM {name}",
            f"DROP ROLE {name}",
        ]:
            cursor.execute(statement)
