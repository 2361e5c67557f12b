"""python manage.py keyword_index_health [--max-bloat F] [--check-only]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.services.keyword_index import keyword_indexes_maintain
from platformcore.lib.errors import InvalidInput
from platformcore.lib.project_scope import across_projects


class Command(BaseCommand):
    help = (
        "Estimate the bloat of the keyword (GIN) indexes and reindex concurrently those past "
        "--max-bloat (default MEMORY_KEYWORD_INDEX_MAX_BLOAT, 0.3): what the hourly job does."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--max-bloat", type=float, default=None, help="reindex at this share")
        parser.add_argument("--check-only", action="store_true", help="report, never reindex")

    @across_projects("manage.py keyword_index_health")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = keyword_indexes_maintain(
                max_bloat=options["max_bloat"], reindex=not options["check_only"]
            )
        except InvalidInput as exc:
            raise CommandError(exc.message) from exc
        for item in report:
            done = f"; reindexed in {item.seconds:.1f} s" if item.reindexed else ""
            self.stdout.write(
                f"{item.index} ({item.table}): {item.size_bytes / 1024:.0f} kB for "
                f"{item.rows} rows, bloat {item.bloat:.2f}{done}"
            )
