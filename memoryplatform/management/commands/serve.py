"""Run the whole platform: migrations, the ASGI server (daphne) and a background worker."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


def _stop(worker: subprocess.Popen[bytes]) -> None:
    """Ask the worker to finish its tasks, then make sure it is gone."""
    worker.terminate()
    try:
        worker.wait(timeout=15)
    except subprocess.TimeoutExpired:
        worker.kill()


class Command(BaseCommand):
    help = "Apply migrations, start a django-q2 worker and serve HTTP + websockets with daphne."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="do not start qcluster")
        parser.add_argument("--no-migrate", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=1)
        call_command("setup_schedules", verbosity=0)  # decay, consolidation, pruning jobs
        if not options["no_worker"]:
            worker = subprocess.Popen(  # its forked workers must not share pooled connections
                [sys.executable, str(settings.BASE_DIR / "manage.py"), "qcluster"],
                env={**os.environ, "MEMORY_DB_POOL": "false"},
            )
            atexit.register(_stop, worker)
        from daphne.cli import CommandLineInterface

        self.stderr.write(
            f"Serving on http://{options['host']}:{options['port']}/ (API docs at /api/docs/)"
        )
        CommandLineInterface().run(
            ["-b", options["host"], "-p", str(options["port"]), "memoryplatform.asgi:application"]
        )
