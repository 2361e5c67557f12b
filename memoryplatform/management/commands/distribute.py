"""Distribute the platform's tables on a Citus cluster: run once on the coordinator after
`migrate` (and again after a migration that adds a tenant table). The work is
platformcore/db/citus.py's `distribute`; docs/scaling.md, "Running on Citus"."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections

from platformcore.db import citus
from platformcore.db.rls import owner_connection


class Command(BaseCommand):
    help = (
        "Make the reference tables and distribute every tenant table by project_id on the "
        "Citus coordinator DATABASE_URL names (idempotent)."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)
        parser.add_argument(
            "--shard-count",
            type=int,
            default=citus.DEFAULT_SHARD_COUNT,
            help="shards per distributed table (set when the first table is distributed)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["shard_count"] < 1:
            raise CommandError("--shard-count: at least 1")
        using = options["database"]
        with owner_connection(using, "manage.py distribute"):
            try:
                summary = citus.distribute(
                    connections[using],
                    shard_count=options["shard_count"],
                    ef_search=settings.MEMORY_HNSW_EF_SEARCH,
                    progress=self.stdout.write,
                )
            except citus.NotCitus as exc:
                raise CommandError(str(exc)) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"{len(summary.reference)} reference and {len(summary.distributed)} distributed "
                f"tables created, {len(summary.already)} already in place; "
                f"{summary.shards} shards per table on {summary.nodes} workers"
            )
        )
