"""Django's `migrate`, run as the database owner rather than the runtime role that row-level
security holds every other connection to (memoryplatform/db/rls.py)."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import migrate

from memoryplatform.db.rls import owner_connection


class Command(migrate.Command):
    def handle(self, *args: Any, **options: Any) -> Any:
        with owner_connection(options["database"], "manage.py migrate"):
            return super().handle(*args, **options)
