"""Recompute decay scores and lifecycle states (the hourly job, run by hand)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.management.commands._maintenance import (
    add_project_argument,
    progress_bar,
    projects,
)
from memories.models import Memory
from memories.services.lifecycle import memories_decay
from platformcore.lib.actor import command
from platformcore.lib.project_scope import across_projects


class Command(BaseCommand):
    help = "Recompute decay scores and states (active/dormant/archived/expired) in batches."

    def add_arguments(self, parser: CommandParser) -> None:
        add_project_argument(parser)

    @across_projects("manage.py run_decay")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        quiet = options["verbosity"] == 0
        try:
            for project in projects(options["project"]):
                total = Memory.objects.for_project(project).alive().count()
                with progress_bar(total, f"decay {project.slug}", quiet) as bar:
                    report = memories_decay(
                        project=project, actor=command("run_decay"), progress=bar.update
                    )
                moves = ", ".join(f"{k} {v}" for k, v in sorted(report.transitions.items()))
                self.stdout.write(
                    f"{project.slug}: {report.scanned} scanned, {report.updated} updated"
                    + (f" ({moves})" if moves else "")
                )
        except CommandError:
            raise
        except Exception as exc:
            raise CommandError(f"decay failed: {exc}") from exc
