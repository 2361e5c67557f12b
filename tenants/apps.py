from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from django.core.management import call_command
from django.db import connections
from django.db.models.signals import post_migrate

LIMITS_CACHE = "limits"


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Projects and API keys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(create_cache_tables, sender=self)


def create_cache_tables(using: str, **kwargs: Any) -> None:
    """The table of the database cache that holds rate-limit counters and stream slots (the
    "limits" cache without Redis): made by every `migrate`, so a fresh install needs no
    `createcachetable` step; a table that exists is left as it is.

    It is UNLOGGED: a write to it writes no WAL, so its commit does not wait for the disk
    (on a busy machine a counter update otherwise waits tens of milliseconds for the WAL
    flush). Counters
    and slots need no crash safety: after a crash they start from zero."""
    call_command("createcachetable", database=using, verbosity=0)
    if LIMITS_CACHE not in settings.CACHES or not isinstance(caches[LIMITS_CACHE], DatabaseCache):
        return
    table = str(settings.CACHES[LIMITS_CACHE]["LOCATION"])
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT relpersistence FROM pg_class WHERE oid = to_regclass(%s)", [table])
        row = cursor.fetchone()
        if row is not None and row[0] == "p":
            cursor.execute(f"ALTER TABLE {connections[using].ops.quote_name(table)} SET UNLOGGED")
