"""``manage.py migrate`` as the tables' owner, then the application role's grants.

When ``DATABASE_MIGRATE_URL`` is set, the migrations run on a connection as the role it
names (the owner of the tables), not as ``DATABASE_URL``'s application role, which may
neither create tables nor bypass row-level security; afterwards the application role
(``DATABASE_URL``'s user, created when missing, with its password) is granted what it
needs (``agent_platform.db_roles``). Without it: Django's ``migrate`` as it is.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.commands import migrate
from django.db import connections

from agent_platform import db_roles, rls


class Command(migrate.Command):
    help = migrate.Command.help + " With DATABASE_MIGRATE_URL: as the tables' owner, then grants the app role."

    def handle(self, *args: Any, **options: Any) -> None:
        owner_url = settings.DATABASE_MIGRATE_URL
        alias = options["database"]
        if owner_url:
            db_roles.connect_as(alias, owner_url)
        with rls.platform_scope():  # a data migration sees every tenant's rows
            super().handle(*args, **options)
        if owner_url and settings.DATABASE_URL:
            role = db_roles.ensure_app_role(alias, settings.DATABASE_URL)
            if options["verbosity"]:
                self.stdout.write(f"Application role {role!r}: granted (NOSUPERUSER NOBYPASSRLS).")
        connections[alias].close()
