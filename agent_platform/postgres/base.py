"""Django's Postgres backend, with the connection pool's check of ``agent_platform.pool``.

Django builds the pool itself and passes it psycopg_pool's own check (a round trip per
borrowed connection) when ``CONN_HEALTH_CHECKS`` is on; this backend builds it the same
way with ``check_connection`` instead. Everything else is Django's.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base

from agent_platform.pool import check_connection


class DatabaseWrapper(base.DatabaseWrapper):
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
