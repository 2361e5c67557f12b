"""Django's `migrate`, run as the database owner rather than the runtime role that row-level
security holds every other connection to (platformcore/db/rls.py).

The whole command runs as the owner, its system checks included: Django runs them before
`handle`, and their first connection (the server's version, for the constraint checks) would
otherwise ask for the runtime role that this very command creates on a fresh database.
"""

from __future__ import annotations

from typing import Any

from django.core.management.commands import migrate
from django.db import DEFAULT_DB_ALIAS

from platformcore.db.rls import owner_connection


class Command(migrate.Command):
    def execute(self, *args: Any, **options: Any) -> Any:
        with owner_connection(options.get("database") or DEFAULT_DB_ALIAS, "manage.py migrate"):
            return super().execute(*args, **options)
