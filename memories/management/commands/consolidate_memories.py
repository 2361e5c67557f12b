"""Merge clusters of near-identical memories (the daily job, run by hand)."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories.management.commands._maintenance import (
    add_project_argument,
    progress_bar,
    projects,
)
from memories.services.consolidation import memories_consolidate
from platformcore.lib.actor import command
from platformcore.lib.project_scope import across_projects


def _since(value: str) -> datetime | str:
    if value == "last":
        return value
    parsed = parse_datetime(value)
    if parsed is None:
        raise argparse.ArgumentTypeError(f"not an ISO date-time or 'last': {value!r}")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


def _advance(bar: Any, done: int, total: int) -> None:
    """Clusters merged so far (reported batch by batch)."""
    bar.total, bar.unit = total, "cluster"
    bar.update(done - bar.n)


class Command(BaseCommand):
    help = "Find clusters of similar memories (pgvector) and merge each into its primary."

    def add_arguments(self, parser: CommandParser) -> None:
        add_project_argument(parser)
        parser.add_argument("--threshold", type=float, default=None, help="default 0.85")
        parser.add_argument("--dry-run", action="store_true", help="report, change nothing")
        parser.add_argument(
            "--since",
            type=_since,
            default=None,
            help='ISO date-time, or "last" (since the project\'s last consolidation): only '
            "memories changed since then look for partners (default: a full run)",
        )

    @across_projects("manage.py consolidate_memories")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        quiet = options["verbosity"] == 0
        try:
            for project in projects(options["project"]):
                with progress_bar(None, f"consolidate {project.slug}", quiet) as bar:
                    report = memories_consolidate(
                        project=project,
                        actor=command("consolidate_memories"),
                        similarity_threshold=options["threshold"],
                        dry_run=options["dry_run"],
                        since=options["since"],
                        progress=lambda done, total, bar=bar: _advance(bar, done, total),
                    )
                prefix = "[dry run] " if report.dry_run else ""
                if report.since:
                    prefix += f"[since {report.since}] "
                self.stdout.write(
                    f"{prefix}{project.slug}: {report.memories_scanned} scanned, "
                    f"{report.clusters_found} clusters, {report.memories_merged} merged, "
                    f"{report.contradictions_found} contradictions"
                )
        except CommandError:
            raise
        except Exception as exc:
            raise CommandError(f"consolidation failed: {exc}") from exc
