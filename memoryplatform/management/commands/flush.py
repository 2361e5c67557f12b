"""Django's `flush` (it truncates every table: the test suite's reset between transactional
tests), run as the database owner: the runtime role may delete rows but never truncate, since
TRUNCATE ignores row-level security (memoryplatform/db/rls.py)."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import flush

from memoryplatform.db.rls import owner_connection


class Command(flush.Command):
    def handle(self, *args: Any, **options: Any) -> Any:
        with owner_connection(options["database"], "manage.py flush"):
            return super().handle(*args, **options)
