"""Prune memories whose effective confidence fell below a threshold; purge old expired ones."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.management.commands._maintenance import (
    add_project_argument,
    progress_bar,
    projects,
)
from memories.services.lifecycle import memories_prune
from platformcore.lib.actor import command
from platformcore.lib.project_scope import across_projects


class Command(BaseCommand):
    help = "Soft-delete memories below the prune threshold (0.05) and purge expired ones."

    def add_arguments(self, parser: CommandParser) -> None:
        add_project_argument(parser)
        parser.add_argument("--threshold", type=float, default=None)
        parser.add_argument("--dry-run", action="store_true")

    @across_projects("manage.py prune_memories")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        quiet = options["verbosity"] == 0
        try:
            for project in projects(options["project"]):
                with progress_bar(None, f"prune {project.slug}", quiet) as bar:
                    report = memories_prune(
                        project=project,
                        actor=command("prune_memories"),
                        threshold=options["threshold"],
                        dry_run=options["dry_run"],
                        progress=bar.update,
                    )
                verb = "would prune" if report.dry_run else "pruned"
                self.stdout.write(
                    f"{project.slug}: {verb} {report.pruned}, purged {report.purged} "
                    f"(threshold {report.threshold})"
                )
        except CommandError:
            raise
        except Exception as exc:
            raise CommandError(f"pruning failed: {exc}") from exc
