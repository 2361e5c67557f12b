from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from platformcore.lib.errors import ServiceError
from platformcore.lib.project_scope import across_projects
from tenants.services import api_key_create, parse_scopes, project_get


class Command(BaseCommand):
    help = "Create an API key for a project. The key is printed once, as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--scopes", default="read,write", help="comma list of read,write,admin")
        parser.add_argument("--name", default="", help="what the key is for")
        parser.add_argument("--expires-in-days", type=int, default=None)

    @across_projects("manage.py create_api_key")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        try:
            project = project_get(slug=options["project"])
            issued = api_key_create(
                project=project,
                scopes=parse_scopes(options["scopes"]),
                name=options["name"],
                expires_in_days=options["expires_in_days"],
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        key = issued.api_key
        self.stderr.write(
            f"Created key {key.prefix} for {project.slug} with scopes {','.join(key.scopes)}. "
            "Store it now: it is not shown again."
        )
        self.stdout.write(issued.raw_key)
