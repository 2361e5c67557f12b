"""python manage.py export_project SLUG --out FILE.jsonl[.gz] [--no-embeddings]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from platformcore.lib.project_scope import all_projects
from portability.exporting import project_export
from portability.progress import SectionBars
from tenants.models import Project


class Command(BaseCommand):
    help = (
        "Export a project (memories with their history, links, archives, contradictions and "
        "feedback; entities, relations and their memories; documents and chunks; tool "
        "feedback) to a JSON-lines file, gzipped when its name ends in .gz (docs/portability.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the project to export")
        parser.add_argument("--out", required=True, help="FILE.jsonl or FILE.jsonl.gz")
        parser.add_argument(
            "--no-embeddings",
            action="store_true",
            help="leave the vectors out (a smaller file; the import computes them)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with all_projects(f"manage.py export_project {options['slug']}: find the project"):
            project = Project.objects.filter(slug=options["slug"]).first()
        if project is None:
            raise CommandError(f"no project {options['slug']!r}")
        bars = SectionBars(quiet=options["verbosity"] == 0, file=self.stderr._out)
        try:
            report = project_export(
                project=project,
                out=Path(options["out"]),
                embeddings=not options["no_embeddings"],
                progress=bars,
            )
        except OSError as exc:
            raise CommandError(f"cannot write {options['out']}: {exc}") from exc
        finally:
            bars.close()
        rows = ", ".join(f"{n} {name}" for name, n in report.counts.items() if n)
        self.stdout.write(
            f"exported {project.slug} to {report.path} ({report.size_bytes} bytes): "
            f"{rows or 'no rows'}"
        )
