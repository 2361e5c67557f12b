from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from platformcore.lib.errors import ServiceError
from platformcore.lib.project_scope import across_projects
from tenants.services import api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key by its prefix (as shown by list_api_keys) or by the full key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix")

    @across_projects("manage.py revoke_api_key")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        try:
            key = api_key_revoke(prefix=options["prefix"])
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"Revoked key {key.prefix} of project {key.project.slug}")
