"""python manage.py import_project FILE --project SLUG [--remap] [--no-embed]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from portability.importing import ImportRefused, project_import
from portability.progress import SectionBars


class Command(BaseCommand):
    help = (
        "Import a file written by export_project into a project (made if missing). The whole "
        "file is checked first: a bad line writes nothing and names its line and field. "
        "Importing the same file again changes nothing (docs/portability.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="FILE.jsonl or FILE.jsonl.gz")
        parser.add_argument("--project", required=True, help="the target project's slug")
        parser.add_argument(
            "--remap",
            action="store_true",
            help="give the rows new ids (needed to import into this deployment beside the "
            "original); without it ids are kept",
        )
        parser.add_argument(
            "--no-embed",
            action="store_true",
            help="do not compute missing vectors now (the hourly jobs will)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"no file {path}")
        bars = SectionBars(quiet=options["verbosity"] == 0, file=self.stderr._out)
        try:
            report = project_import(
                path=path,
                slug=options["project"],
                remap=options["remap"],
                embed=not options["no_embed"],
                progress=bars,
            )
        except ImportRefused as exc:
            raise CommandError(exc.message) from exc
        finally:
            bars.close()
        made = " (new project)" if report.created_project else ""
        inserted = ", ".join(f"{n} {name}" for name, n in report.inserted.items() if n)
        present = sum(report.present.values())
        embedded = ", ".join(f"{n} {name}" for name, n in report.embedded.items() if n)
        self.stdout.write(f"imported into {report.project}{made}: {inserted or 'no new rows'}")
        if present:
            self.stdout.write(f"{present} rows were already there and left as they were")
        if embedded:
            self.stdout.write(f"vectors computed: {embedded}")
