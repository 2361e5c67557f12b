"""Install (or repair) the background job schedules; idempotent, run by `serve`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django_q.models import Schedule

from memories.tasks import SCHEDULE_MINUTES, SCHEDULES


class Command(BaseCommand):
    help = "Create or update the django-q2 schedules: decay, consolidation, pruning, back-fill."

    def handle(self, *args: Any, **options: Any) -> None:
        for name, (func, kind) in SCHEDULES.items():
            defaults = {"func": func, "schedule_type": kind, "repeats": -1}
            if name in SCHEDULE_MINUTES:
                defaults["minutes"] = SCHEDULE_MINUTES[name]
            _, created = Schedule.objects.update_or_create(name=name, defaults=defaults)
            self.stdout.write(f"{'created' if created else 'kept'} {name}: {func} ({kind})")
