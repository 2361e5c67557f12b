"""python manage.py backfill_embeddings [--project SLUG] [--reembed-all] [--batch-size N]"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memories.services.backfill import backfill_queryset, memories_backfill_embeddings
from platformcore.lib.project_scope import across_projects
from tenants.models import Project


class Command(BaseCommand):
    help = (
        "Embed memories stored without a vector (the provider was unavailable), or with "
        "--reembed-all every memory, e.g. after changing the embedding model."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="only this project (slug); default: all")
        parser.add_argument(
            "--reembed-all",
            action="store_true",
            help="re-embed every live memory and record the configured model as the stored one",
        )
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--no-progress", action="store_true")

    @across_projects("manage.py backfill_embeddings")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        project = None
        if options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"no project {options['project']!r}")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        total = backfill_queryset(project=project, reembed_all=options["reembed_all"]).count()
        with tqdm(
            total=total,
            desc="embedding",
            unit="memory",
            disable=options["no_progress"],
            file=sys.stderr,
        ) as bar:
            result = memories_backfill_embeddings(
                project=project,
                reembed_all=options["reembed_all"],
                batch_size=options["batch_size"],
                progress=bar.update,
            )
        self.stdout.write(
            f"{result.embedded} embedded, {result.failed} failed, {result.total} considered"
            + ("; embedding model recorded" if result.space_recorded else "")
        )
        if result.failed:
            raise CommandError(f"{result.failed} memories could not be embedded; run it again")
