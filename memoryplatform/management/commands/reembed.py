"""python manage.py reembed [--project SLUG] [--all]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryplatform.lib.rls import across_projects
from memoryplatform.maintenance.embeddings import embeddings_refresh, model_changed
from memoryplatform.portability.progress import SectionBars
from tenants.models import Project


class Command(BaseCommand):
    help = (
        "Compute the vectors memories, entities and document chunks lack; with --all (or "
        "when the configured embedding model is not the recorded one) re-embed every row, "
        "then record the model. What the hourly job does."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="project slug (default: every project)")
        parser.add_argument("--all", action="store_true", help="re-embed every row")

    @across_projects("manage.py reembed")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        projects = None
        if options["project"]:
            projects = list(Project.objects.filter(slug=options["project"]))
            if not projects:
                raise CommandError(f"no project {options['project']!r}")
        everything = bool(options["all"] or model_changed())
        bars = SectionBars(quiet=options["verbosity"] == 0, file=self.stderr._out)
        try:
            report = embeddings_refresh(projects=projects, everything=everything, progress=bars)
        finally:
            bars.close()
        done = ", ".join(f"{n} {table}" for table, n in report.embedded.items()) or "nothing"
        self.stdout.write(f"embedded: {done} in {report.seconds:.1f} s")
        if report.space_recorded:
            self.stdout.write("recorded the configured model as the stored vectors' model")
        failed = {table: n for table, n in report.failed.items() if n}
        if failed:
            raise CommandError(f"the provider failed for {failed}; run again later")
