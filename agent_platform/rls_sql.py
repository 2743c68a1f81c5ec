"""The SQL of row-level security: the policies on tenant-owned tables and the grants of
the application role. Migrations build their operations from these helpers, so a table
added later gets its policy the same way (``agent_platform.rls`` says what a scope is).

A table is tenant-owned when it has a ``tenant`` column, or a required foreign key to a
tenant-owned table (an event through its session, a token through its principal);
``agent_platform/tests/test_rls.py`` derives that from the models and fails for a table
without its policy. Each policy is named ``tenant_isolation``; RLS is enabled and forced
(so the tables' owner is held to it too, outside ``platform_scope``). A migration that
ran keeps its SQL: change a helper's SQL only with a new helper and a new migration.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

POLICY = "tenant_isolation"

# The scope's tenant (NULL unless the setting is a tenant's id) and whether it is the
# platform's; STABLE SQL functions, so the planner inlines them and an index on
# tenant_id serves "tenant_id = app_tenant()".
FUNCTIONS = """
CREATE OR REPLACE FUNCTION app_tenant() RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN current_setting('app.tenant_id', true) ~ '^[0-9]{1,18}$'
              THEN current_setting('app.tenant_id', true)::bigint END
$$;
CREATE OR REPLACE FUNCTION app_platform_scope() RETURNS boolean LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(current_setting('app.tenant_id', true) = '*', false)
$$;
"""
DROP_FUNCTIONS = "DROP FUNCTION IF EXISTS app_tenant(); DROP FUNCTION IF EXISTS app_platform_scope();"


class PostgresSQL(migrations.RunSQL):
    """``RunSQL`` on Postgres only: row-level security is Postgres's, and the embedded
    form's SQLite (one process, one tenant's developer) has nothing to run it on."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


def _policy(table: str, condition: str) -> PostgresSQL:
    visible = f"app_platform_scope() OR ({condition})"
    return PostgresSQL(
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; ALTER TABLE {table} FORCE ROW LEVEL SECURITY; "
        f"CREATE POLICY {POLICY} ON {table} USING ({visible}) WITH CHECK ({visible});",
        f"DROP POLICY IF EXISTS {POLICY} ON {table}; ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY; "
        f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY;",
    )


def functions() -> PostgresSQL:
    return PostgresSQL(FUNCTIONS, DROP_FUNCTIONS)


def tenant_column(table: str, column: str = "tenant_id") -> PostgresSQL:
    """A table with its own tenant column: the scope's tenant's rows (none where NULL)."""
    return _policy(table, f"{column} = app_tenant()")


def shared_or_tenant(table: str, column: str = "tenant_id") -> PostgresSQL:
    """A table whose rows with no tenant are shared (agents from AGENTS_DIR): those are
    visible in every tenant's scope, the others in their tenant's."""
    return _policy(table, f"{column} = app_tenant() OR ({column} IS NULL AND app_tenant() IS NOT NULL)")


def through(table: str, column: str, parent: str) -> PostgresSQL:
    """A table owned through a required foreign key: a row is visible (to read, change or
    delete) when the parent row it names is; the parent's own policy decides.

    A new row only needs some tenant's scope: a statement that inserts the parent and its
    children at once (a session and its first turn, ``agent_platform.rows.insert``) cannot
    see the parent yet, and the foreign key already holds the child to an existing parent
    (events, whose key is unchecked, are inserted only through their session row's update).
    """
    # Table and column names are the migration's own constants, never input.
    parent_row = f"SELECT 1 FROM {parent} AS parent WHERE parent.id = {table}.{column}"  # noqa: S608
    visible = f"app_platform_scope() OR EXISTS ({parent_row})"
    return PostgresSQL(
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; ALTER TABLE {table} FORCE ROW LEVEL SECURITY; "
        f"CREATE POLICY {POLICY} ON {table} FOR SELECT USING ({visible}); "
        f"CREATE POLICY {POLICY}_update ON {table} FOR UPDATE USING ({visible}) WITH CHECK ({visible}); "
        f"CREATE POLICY {POLICY}_delete ON {table} FOR DELETE USING ({visible}); "
        f"CREATE POLICY {POLICY}_insert ON {table} FOR INSERT "
        "WITH CHECK (app_platform_scope() OR app_tenant() IS NOT NULL);",
        f"DROP POLICY IF EXISTS {POLICY} ON {table}; DROP POLICY IF EXISTS {POLICY}_update ON {table}; "
        f"DROP POLICY IF EXISTS {POLICY}_delete ON {table}; DROP POLICY IF EXISTS {POLICY}_insert ON {table}; "
        f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY; ALTER TABLE {table} DISABLE ROW LEVEL SECURITY;",
    )


def grant_statements(role: str, owner: str) -> list[str]:
    """What the application role needs on the tables the owner makes, now and later."""
    return [
        f"GRANT USAGE ON SCHEMA public TO {role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
        f"GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {role}",
    ]
