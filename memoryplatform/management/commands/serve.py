"""Run the whole platform: migrations, the ASGI server (daphne) and a background worker.

`serve` owns what it starts and stops it on SIGINT (Ctrl-C) and SIGTERM (`docker stop`, an
orchestrator): daphne stops serving, the django-q2 worker cluster is asked to stop (SIGTERM,
then killed with its workers after STOP_TIMEOUT_SECONDS), and the embedded PostgreSQL stops
when the process exits, if no other process is attached to it (platformcore/db/embedded).
The worker runs in a session of its own, so a terminal's Ctrl-C reaches `serve` alone and the
worker is stopped once, in order; on Linux it is also told to stop if `serve` dies without
cleaning up (PR_SET_PDEATHSIG).

`--workers N` serves from N daphne processes (platformcore/lib/web_workers.py): each has its
own connection pools and embedding model, all accept on one socket this command binds, and a
process that dies is started again. Events reach clients on any process through the Redis
channel layer, so more than one process needs REDIS_URL.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from daphne.cli import CommandLineInterface
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryplatform import health
from platformcore import metrics
from platformcore.db.embedded.server import forget_exited_processes
from platformcore.lib import web_workers

STOP_TIMEOUT_SECONDS = 15


class Command(BaseCommand):
    help = "Apply migrations, start a django-q2 worker and serve HTTP + websockets with daphne."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="do not start qcluster")
        parser.add_argument("--no-migrate", action="store_true")
        parser.add_argument(
            "--workers",
            type=int,
            default=None,
            help="server processes (default: one per core with REDIS_URL, else 1)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            workers = web_workers.how_many(options["workers"], redis=bool(settings.REDIS_URL))
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if workers > 1 and not settings.REDIS_URL:
            raise CommandError(
                "--workers above 1 needs REDIS_URL: live-feed events reach clients on every "
                "server process only through the Redis channel layer"
            )
        # Until daphne installs its own handlers, a signal ends the command through `finally`.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, _exit_on_signal)
        worker: subprocess.Popen[bytes] | None = None
        worker_metrics = Path(settings.DATA_DIR) / "metrics" / f"worker-{os.getpid()}"
        if workers > 1:  # every process writes its metrics where /metrics of any reads them
            web_workers.share_metrics(Path(settings.DATA_DIR) / "metrics" / f"serve-{os.getpid()}")
        try:
            if not options["no_migrate"]:
                call_command("migrate", interactive=False, verbosity=1)
            call_command("setup_schedules", verbosity=0)  # decay, consolidation, pruning jobs
            if not options["no_worker"]:
                worker = start_worker(None if metrics.multiprocess() else worker_metrics)
                health.watch_embedded_worker(worker)
            if workers > 1:
                self.stderr.write(
                    f"Serving on http://{options['host']}:{options['port']}/ from {workers} "
                    "processes (API docs at /api/docs/)"
                )
                web_workers.serve(options["host"], options["port"], workers)
            else:
                self._serve(options["host"], options["port"])
        finally:
            health.watch_embedded_worker(None)
            if worker is not None:
                self.stderr.write("Stopping the background worker...")
                stop_worker(worker)
                metrics.forget_directory(worker_metrics)
                shutil.rmtree(worker_metrics, ignore_errors=True)
            _detach_exited_workers()  # the job worker's and server processes' attachments
            self.stderr.write("Stopped.")

    def _serve(self, host: str, port: int) -> None:
        self.stderr.write(f"Serving on http://{host}:{port}/ (API docs at /api/docs/)")
        CommandLineInterface().run(["-b", host, "-p", str(port), "memoryplatform.asgi:application"])


def _detach_exited_workers() -> None:
    """The worker's forked processes that connected to the embedded PostgreSQL exited
    without detaching: forget them, so that this process, the last one, stops the server
    at exit (platformcore/db/embedded/server.py)."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "platformcore.db.embedded":
        forget_exited_processes(Path(database["PGDATA"]))  # type: ignore[typeddict-item]


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def start_worker(metrics_directory: Path | None) -> subprocess.Popen[bytes]:
    """`manage.py qcluster` in a session of its own. Its forked workers must not share
    pooled connections (MEMORY_DB_POOL off). Given `metrics_directory` (when this process
    keeps its metrics in memory), the worker writes its own there (job durations), and this
    server's /metrics reads them."""
    env = {**os.environ, "MEMORY_DB_POOL": "false"}
    if metrics_directory is not None:
        directory = metrics_directory
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        env["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
        metrics.include_directory(directory)
    return subprocess.Popen(
        [sys.executable, str(settings.BASE_DIR / "manage.py"), "qcluster"],
        env=env,
        start_new_session=True,
        preexec_fn=_stop_with_parent if sys.platform == "linux" else None,
    )


def _stop_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent dies (Linux's PR_SET_PDEATHSIG)."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    """Ask the cluster to finish (it stops its workers), then make sure all of it is gone."""
    if worker.poll() is None:
        worker.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(timeout=STOP_TIMEOUT_SECONDS)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(worker.pid, signal.SIGKILL)  # what is left in its session: orphaned workers
    worker.wait()
