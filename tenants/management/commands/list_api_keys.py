from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from platformcore.lib.project_scope import across_projects
from tenants.models import ApiKey


class Command(BaseCommand):
    help = "List API keys (prefix, project, scopes, state). Keys themselves are never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", default=None, help="only this project's keys")

    @across_projects("manage.py list_api_keys")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        keys = ApiKey.objects.select_related("project").order_by("project__slug", "created_at")
        if options["project"]:
            keys = keys.filter(project__slug=options["project"])
        self.stdout.write(f"{'prefix':<10} {'project':<20} {'scopes':<18} {'state':<8} name")
        for key in keys:
            state = "revoked" if key.revoked_at else ("active" if key.is_usable else "expired")
            self.stdout.write(
                f"{key.prefix:<10} {key.project.slug:<20} {','.join(key.scopes):<18} "
                f"{state:<8} {key.name}"
            )
        self.stdout.write(f"{keys.count()} key(s)")
