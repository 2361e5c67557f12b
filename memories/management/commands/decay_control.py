"""Pause, resume or show the scheduled decay of a project (or of every project)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memories.management.commands._maintenance import add_project_argument, projects
from memories.services.decay_control import decay_control_status, decay_pause, decay_resume
from platformcore.lib.actor import command
from platformcore.lib.project_scope import across_projects


class Command(BaseCommand):
    help = (
        "Pause or resume the hourly decay job per project (a paused project's scores and "
        "states stay as they are), or show whether it is paused."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["pause", "resume", "status"])
        add_project_argument(parser)

    @across_projects("manage.py decay_control")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        actor = command("decay_control")
        for project in projects(options["project"]):
            match options["action"]:
                case "pause":
                    status = decay_pause(project=project, actor=actor)
                case "resume":
                    status = decay_resume(project=project, actor=actor)
                case _:
                    status = decay_control_status(project=project)
            since = f" since {status['paused_at']:%Y-%m-%d %H:%M} UTC" if status["paused"] else ""
            state = "paused" if status["paused"] else "running"
            self.stdout.write(f"{project.slug}: decay {state}{since}")
