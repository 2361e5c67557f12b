"""python manage.py rebuild_vector_index [--m 16] [--ef-construction 128]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from memories.models import Memory

INDEX = "memory_embedding_hnsw"


def _model_index() -> Any:
    """The index as the model declares it: its m and ef_construction are the defaults."""
    return next(index for index in Memory._meta.indexes if index.name == INDEX)


class Command(BaseCommand):
    help = (
        "Rebuild the HNSW index of memory embeddings with other build parameters (higher m "
        "and ef_construction: better recall, bigger and slower to build). Built concurrently: "
        "reads and writes go on meanwhile. Query breadth is MEMORY_HNSW_EF_SEARCH."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        index = _model_index()
        parser.add_argument("--m", type=int, default=index.m, help="links per node (2-100)")
        parser.add_argument(
            "--ef-construction", type=int, default=index.ef_construction, help="build breadth"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        m, ef = options["m"], options["ef_construction"]
        if not 2 <= m <= 100 or not 4 <= ef <= 1000 or ef < 2 * m:
            raise CommandError("need 2 <= m <= 100 and 2*m <= ef_construction <= 1000")
        table = "memories_memory"
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}_new")
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY {INDEX}_new ON {table} USING hnsw "
                f"(embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef}) "
                "WHERE deleted_at IS NULL"  # live memories only, as the model declares it
            )
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
            cursor.execute(f"ALTER INDEX {INDEX}_new RENAME TO {INDEX}")
        self.stdout.write(f"{INDEX} rebuilt with m={m}, ef_construction={ef}")
