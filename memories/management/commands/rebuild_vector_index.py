"""python manage.py rebuild_vector_index [--m M] [--ef-construction EF]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.services.vector_index import INDEX, USER_VECTORS, vector_index_rebuild
from platformcore.lib.errors import InvalidInput
from platformcore.lib.project_scope import across_projects


class Command(BaseCommand):
    help = (
        "Rebuild the HNSW index of memory embeddings (and reindex the covering index of users' "
        "vectors), with other build parameters if given "
        "(higher m and ef_construction: better recall, bigger and slower to build; default: "
        "the index's own). Built concurrently: reads and writes go on meanwhile. Query "
        "breadth is MEMORY_HNSW_EF_SEARCH; vector_index_health rebuilds only when needed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--m", type=int, default=None, help="links per node (2-100)")
        parser.add_argument("--ef-construction", type=int, default=None, help="build breadth")

    @across_projects("manage.py rebuild_vector_index")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = vector_index_rebuild(
                m=options["m"], ef_construction=options["ef_construction"]
            )
        except InvalidInput as exc:
            raise CommandError(exc.message) from exc
        if not report.rebuilt:
            raise CommandError(f"{INDEX} is being rebuilt by another run; try again later")
        self.stdout.write(
            f"{INDEX} rebuilt with m={report.m}, ef_construction={report.ef_construction} "
            f"in {report.seconds:.1f} s ({USER_VECTORS} reindexed in "
            f"{report.user_vectors_seconds:.1f} s)"
        )
