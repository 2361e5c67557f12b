"""python manage.py backup [--out DIR] [--keep N]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from platformcore.lib.errors import ServiceError
from portability.backup import backup_create


class Command(BaseCommand):
    help = (
        "Write a consistent snapshot of the platform's database (pg_dump plus a manifest: "
        "version, time, migrations, row counts, checksum) into a new timestamped folder under "
        "MEMORY_DATA_DIR/backups or --out, keeping the --keep newest (docs/portability.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", help="the folder to write backups into")
        parser.add_argument("--keep", type=int, help="then keep only the N newest backups there")
        parser.add_argument("--database", default="default", help="the database alias")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = backup_create(
                out=Path(options["out"]) if options["out"] else None,
                keep=options["keep"],
                using=options["database"],
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"backup written to {report.path}: {report.tables} tables, {report.rows} rows, "
            f"{report.size_bytes} bytes, {report.originals} document files"
        )
        for folder in report.removed:
            self.stdout.write(f"removed the older backup {folder}")
