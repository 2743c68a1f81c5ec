"""Django's Postgres backend, with the connection pool's check of ``agent_platform.pool``
and the row-level security scope of ``agent_platform.rls``.

Django builds the pool itself and passes it psycopg_pool's own check (a round trip per
borrowed connection) when ``CONN_HEALTH_CHECKS`` is on; this backend builds it the same
way with ``check_connection`` instead, and empties the tenant setting of a connection
as it is given back (``_close``, in the thread giving it back, and only when a scope was
set: a pool ``reset`` runs in one of the pool's threads for every connection returned, a
thread handoff on each of a turn's many borrows).

The scope: each cursor made compares the context's scope with the one the connection
carries and sets ``app.tenant_id`` (a session setting, through psycopg directly so that
Django's query log and counts are unchanged) only when they differ; a request pays one
round trip when its tenant becomes known. A setting made inside a transaction that is
rolled back is undone by Postgres, so then the connection's scope counts as unknown and
is set again before the next statement. Each connection is asked once whether RLS binds
its role; one that it does not bind (a superuser, as in the test suite) is never given a
scope, so there the scopes cost nothing.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base

from agent_platform import rls
from agent_platform.pool import check_connection

_SET_SCOPE = "SELECT set_config('app.tenant_id', %s, false)"
_BOUND = "SELECT NOT (rolsuper OR rolbypassrls) FROM pg_roles WHERE rolname = current_user"
_UNKNOWN = None
_NEVER = "never"  # the scope of a connection whose role RLS does not bind


def _rls_binds(conn: psycopg.Connection[Any]) -> bool:
    """Whether row-level security binds the connection's role (asked once per connection:
    for a superuser or a BYPASSRLS role, the scope is never set, so it costs nothing)."""
    binds = getattr(conn, "_rls_binds", None)
    if binds is None:
        row = conn.execute(_BOUND).fetchone()
        binds = bool(row and row[0])
        conn._rls_binds = binds  # type: ignore[attr-defined]
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.commit()
    return binds


def reset_scope(conn: psycopg.Connection[Any]) -> None:
    """A connection goes back to the pool seeing nothing."""
    if not getattr(conn, "_rls_binds", False):
        return  # never set (the role bypasses RLS, or nothing ran on it)
    conn.execute(_SET_SCOPE, (rls.NOBODY,))
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.commit()


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rls_scope: str | None = _UNKNOWN
        self._rls_set_in_transaction = False

    @property
    def pool(self) -> Any:
        options = self.settings_dict["OPTIONS"].get("pool")
        if self.alias == NO_DB_ALIAS or not options:
            return None
        if self.alias not in self._connection_pools:  # type: ignore[attr-defined]
            from psycopg_pool import ConnectionPool

            params = self.get_connection_params()
            params["autocommit"] = True  # as Django: it sets the mode it wants later
            pool = ConnectionPool(
                kwargs=params,
                open=False,
                configure=self._configure_connection,  # type: ignore[attr-defined]
                check=check_connection,
                **({} if options is True else options),
            )
            # As Django: of several threads making one at start-up, the first one's wins.
            self._connection_pools.setdefault(self.alias, pool)  # type: ignore[attr-defined]
        return self._connection_pools[self.alias]  # type: ignore[attr-defined]

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        # A new connection, or a pooled one reset on its way back: it sees nothing. A role
        # that RLS does not bind is never given a scope (the same for every scope).
        bound = _rls_binds(connection)
        self._rls_scope = rls.NOBODY if bound else _NEVER
        self._rls_set_in_transaction = False
        return connection

    def _close(self) -> None:
        if self.connection is not None and self.pool and self._rls_scope not in (rls.NOBODY, _NEVER):
            try:
                reset_scope(self.connection)
            except psycopg.Error:
                self.connection.close()  # the pool discards it and opens another
        super()._close()  # type: ignore[misc]

    def create_cursor(self, name: str | None = None) -> Any:
        self._apply_scope()
        return super().create_cursor(name)

    def _apply_scope(self) -> None:
        wanted = rls.current()
        if wanted == self._rls_scope or self._rls_scope is _NEVER or self.connection is None:
            return
        status = self.connection.info.transaction_status
        if status == psycopg.pq.TransactionStatus.INERROR:
            return  # only a rollback can run now; the next statement after it sets the scope
        self.connection.execute(_SET_SCOPE, (wanted,))
        self._rls_scope = wanted
        if not self.get_autocommit():
            self._rls_set_in_transaction = True

    def _commit(self) -> None:
        super()._commit()  # type: ignore[misc]
        self._rls_set_in_transaction = False

    def _rollback(self) -> None:
        super()._rollback()  # type: ignore[misc]
        if self._rls_set_in_transaction and self._rls_scope is not _NEVER:
            self._rls_scope = _UNKNOWN
        self._rls_set_in_transaction = False

    def _savepoint_rollback(self, sid: str) -> None:
        super()._savepoint_rollback(sid)  # type: ignore[misc]
        if self._rls_set_in_transaction and self._rls_scope is not _NEVER:
            self._rls_scope = _UNKNOWN
