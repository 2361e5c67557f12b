"""python manage.py import_memories --project SLUG FILE.jsonl [--batch-size N] [--in-flight N]
[--near-duplicates inline|consolidation] [--vector-index inline|deferred]"""

from __future__ import annotations

import json
import sys
import time
from typing import IO, Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memories.api.serializers import MemoryCreateSerializer
from memories.services.bulk import NEAR_DUPLICATE_MODES, VECTOR_INDEX_MODES
from memories.services.importing import (
    DEFAULT_BATCH,
    DEFAULT_IN_FLIGHT,
    ImportFailed,
    memories_import,
)
from memories.services.memories import MemoryInput
from memories.services.vector_index import pending_vectors
from platformcore.lib.actor import command
from platformcore.lib.errors import InvalidInput
from platformcore.lib.project_scope import across_projects
from tenants.models import Project

MAX_ERRORS = 20  # reported before giving up on a broken file


class Command(BaseCommand):
    help = (
        "Import memories from a JSON Lines file (one object per line with the fields of "
        "POST /api/v1/memories/; '-' reads standard input). Every line is checked first: "
        "one bad line and nothing is stored. Then the memories go in bulk writes (exact "
        "duplicates and near-duplicates merge as on any write), several in flight."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="JSON Lines file, or - for standard input")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH)
        parser.add_argument("--in-flight", type=int, default=DEFAULT_IN_FLIGHT)
        parser.add_argument(
            "--near-duplicates",
            choices=NEAR_DUPLICATE_MODES,
            default=None,
            help="inline: merge near-duplicates while importing; consolidation: import them "
            "and let the consolidation job merge them (faster). Default: the project's "
            "bulk_near_duplicates setting.",
        )
        parser.add_argument(
            "--vector-index",
            choices=VECTOR_INDEX_MODES,
            default=None,
            help="inline: each batch inserts its vectors into the HNSW index; deferred: the "
            "background job (or manage.py index_vectors) does it after the import (faster; the "
            "memories are searchable meanwhile). Default: the project's bulk_vector_index.",
        )
        parser.add_argument("--no-progress", action="store_true")

    @across_projects("manage.py import_memories")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"no project {options['project']!r}")
        if options["file"] == "-":
            items = read_items(sys.stdin)
        else:
            try:
                with open(options["file"], encoding="utf-8") as handle:
                    items = read_items(handle)
            except OSError as exc:
                raise CommandError(f"cannot read {options['file']}: {exc}") from exc
        started = time.perf_counter()
        with tqdm(
            total=len(items),
            desc="importing",
            unit="memory",
            disable=options["no_progress"],
            file=sys.stderr,
        ) as bar:
            try:
                summary = memories_import(
                    project=project,
                    items=items,
                    actor=command("import_memories"),
                    batch_size=options["batch_size"],
                    in_flight=options["in_flight"],
                    progress=bar.update,
                    near_duplicates=options["near_duplicates"],
                    vector_index=options["vector_index"],
                )
            except InvalidInput as exc:
                raise CommandError(f"{exc.message}: {exc.fields}") from exc
            except ImportFailed as exc:
                done = exc.summary
                raise CommandError(
                    f"{exc}. The first {done.items} items are stored ({done.created} new); "
                    f"fix the file and import from item {done.failed_at} on."
                ) from exc
        seconds = time.perf_counter() - started
        self.stdout.write(
            f"{summary.items} memories imported into {project.slug}: {summary.created} new, "
            f"{summary.existing} duplicates or merged, in {seconds:.1f} s "
            f"({summary.items / max(seconds, 1e-9):.0f}/s)"
        )
        waiting = pending_vectors(project=project)
        if waiting:
            self.stdout.write(
                f"{waiting} vectors wait for the HNSW index: the background job adds them "
                "(or run manage.py index_vectors); searches find those memories meanwhile"
            )


def read_items(lines: IO[str]) -> list[MemoryInput]:
    """Every line checked as the API checks a create body; CommandError naming the lines."""
    items: list[MemoryInput] = []
    errors: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            body = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: not JSON ({exc.msg})")
        else:
            serializer = MemoryCreateSerializer(data=body)
            if serializer.is_valid():
                items.append(MemoryInput(**serializer.validated_data))
            else:
                errors.append(f"line {number}: {json.dumps(serializer.errors)}")
        if len(errors) >= MAX_ERRORS:
            errors.append("(stopped reading)")
            break
    if errors:
        raise CommandError("nothing imported:\n" + "\n".join(errors))
    return items
