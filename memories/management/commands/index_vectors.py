"""python manage.py index_vectors [--project SLUG] [--batch-size N] [--workers N] [--no-progress]"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memories.management.commands._maintenance import add_project_argument, projects
from memories.services.vector_index import BATCH, index_pending_vectors, pending_vectors
from platformcore.lib.project_scope import across_projects


class Command(BaseCommand):
    help = (
        "Put the vectors that bulk writes deferred (vector_index: deferred) into the HNSW "
        "index now, instead of waiting for the background job. Searches find those memories "
        "either way; until then they are compared exactly, which costs more as they pile up."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_project_argument(parser)
        parser.add_argument("--batch-size", type=int, default=BATCH)
        parser.add_argument(
            "--workers",
            type=int,
            default=None,
            help="connections inserting at once (default MEMORY_VECTOR_INDEX_WORKERS, 2)",
        )
        parser.add_argument("--no-progress", action="store_true")

    @across_projects("manage.py index_vectors")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        if options["workers"] is not None and options["workers"] < 1:
            raise CommandError("--workers must be at least 1")
        chosen = projects(options["project"]) if options["project"] else [None]
        indexed, seconds = 0, 0.0
        for project in chosen:
            with tqdm(
                total=pending_vectors(project=project),
                desc="indexing vectors",
                unit="memory",
                disable=options["no_progress"],
                file=sys.stderr,
            ) as bar:
                report = index_pending_vectors(
                    project=project,
                    batch=options["batch_size"],
                    workers=options["workers"],
                    progress=bar.update,
                )
            indexed, seconds = indexed + report.indexed, seconds + report.seconds
        left = sum(pending_vectors(project=project) for project in chosen)
        rate = f" ({indexed / seconds:.0f}/s)" if indexed and seconds else ""
        self.stdout.write(
            f"{indexed} vectors indexed in {seconds:.1f} s{rate}; {left} still pending"
        )
