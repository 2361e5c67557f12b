"""python manage.py restore DIR [--force]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from platformcore.lib.errors import ServiceError
from portability.backup import backup_restore


class Command(BaseCommand):
    help = (
        "Bring the platform's database back from a folder `backup` wrote. The database must "
        "be empty (a fresh installation) unless --force, which replaces everything in it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", help="a backup folder (with manifest.json)")
        parser.add_argument(
            "--force", action="store_true", help="replace a database that is not empty"
        )
        parser.add_argument("--database", default="default", help="the database alias")

    def handle(self, *args: Any, **options: Any) -> None:
        folder = Path(options["folder"])
        if not folder.is_dir():
            raise CommandError(f"no folder {folder}")
        try:
            report = backup_restore(
                folder=folder, force=options["force"], using=options["database"]
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"restored {report.path}: {report.rows} rows, {report.originals} document files"
        )
        if report.mismatched:
            lines = ", ".join(f"{t} {a} -> {b}" for t, (a, b) in report.mismatched.items())
            raise CommandError(f"row counts differ from the manifest's: {lines}")
