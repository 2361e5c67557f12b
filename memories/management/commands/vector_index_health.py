"""python manage.py vector_index_health [--sample N] [--min-recall R] [--check-only]"""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memories.services.vector_index import vector_index_maintain
from memoryplatform.lib.errors import InvalidInput


class Command(BaseCommand):
    help = (
        "Measure the HNSW index's recall@10 against exact search on a random sample of "
        "memories and rebuild it concurrently when below --min-recall (what the hourly job "
        "does). Merges, deletes and re-embeddings wear the graph down over time."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sample", type=int, default=None, help="queries (default 50)")
        parser.add_argument(
            "--min-recall", type=float, default=None, help="rebuild below this (default 0.95)"
        )
        parser.add_argument("--check-only", action="store_true", help="measure, never rebuild")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        sample = options["sample"] or settings.MEMORY_HNSW_RECALL_SAMPLE
        try:
            with tqdm(
                total=sample,
                desc="measuring recall",
                unit="query",
                disable=options["no_progress"],
                file=sys.stderr,
            ) as bar:
                report = vector_index_maintain(
                    min_recall=options["min_recall"],
                    sample=sample,
                    rebuild=not options["check_only"],
                    progress=bar.update,
                )
        except InvalidInput as exc:
            raise CommandError(exc.message) from exc
        if report.recall is None:
            self.stdout.write("no memory in the vector index yet: nothing to measure")
            return
        line = (
            f"recall@10 {report.recall:.3f} on {report.sampled} memories "
            f"(rebuild below {report.min_recall:.2f})"
        )
        if report.rebuilt:
            line += f"; rebuilt: recall@10 {report.recall_after:.3f}"
        elif report.recall < report.min_recall:
            line += "; not rebuilt (--check-only, or another rebuild was running)"
        self.stdout.write(f"{line}; {report.seconds:.1f} s")
