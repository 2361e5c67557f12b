from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from platformcore.lib.errors import ServiceError
from platformcore.lib.project_scope import across_projects
from tenants.services import project_create


class Command(BaseCommand):
    help = "Create a project (tenant)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="lowercase identifier, e.g. 'acme'")
        parser.add_argument("--name", default="", help="display name")

    @across_projects("manage.py create_project")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        try:
            project = project_create(slug=options["slug"], name=options["name"])
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        except Exception as exc:  # full_clean's ValidationError
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Created project {project.slug} ({project.name})")
