"""python manage.py vector_index_health [--max-churn F] [--check-only]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.services.vector_index import vector_index_maintain
from platformcore.lib.errors import InvalidInput
from platformcore.lib.project_scope import across_projects


class Command(BaseCommand):
    help = (
        "Report the HNSW index's wear (row versions lost to merges, deletes and re-embeddings "
        "since its build, against the rows in it) and rebuild it concurrently once that "
        "reaches --max-churn (default MEMORY_HNSW_REBUILD_CHURN, 0.25): what the hourly job does."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--max-churn", type=float, default=None, help="rebuild at this share")
        parser.add_argument("--check-only", action="store_true", help="report, never rebuild")

    @across_projects("manage.py vector_index_health")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = vector_index_maintain(
                max_churn=options["max_churn"], rebuild=not options["check_only"]
            )
        except InvalidInput as exc:
            raise CommandError(exc.message) from exc
        line = (
            f"{report.changes} row versions lost since the build, {report.graph_rows} memories "
            f"in the index: churn {report.churn:.2f} (rebuild at {report.max_churn:.2f})"
        )
        if report.rebuilt:
            line += "; rebuilt"
        elif report.max_churn and report.churn >= report.max_churn:
            line += "; not rebuilt (--check-only, or another rebuild was running)"
        self.stdout.write(f"{line}; {report.seconds:.1f} s")
