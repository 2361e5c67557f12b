"""Django's `flush` (it truncates every table: the test suite's reset between transactional
tests), run as the database owner: the runtime role may delete rows but never truncate, since
TRUNCATE ignores row-level security (platformcore/db/rls.py)."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import flush
from django.db import DEFAULT_DB_ALIAS

from platformcore.db.rls import owner_connection


class Command(flush.Command):
    def execute(self, *args: Any, **options: Any) -> Any:
        with owner_connection(options.get("database") or DEFAULT_DB_ALIAS, "manage.py flush"):
            return super().execute(*args, **options)
