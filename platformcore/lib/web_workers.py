"""Serving from several processes: `manage.py serve --workers N`.

One Python process runs Python on one core at a time (the GIL), so a single server process
leaves the other cores to PostgreSQL and the embedder's threads. Here the parent binds the
listening socket once and starts N daphne processes that accept on it (the kernel hands each
connection to one of them); a process that dies is started again, and SIGINT/SIGTERM stop them
all. daphne behind this small supervisor, rather than gunicorn with uvicorn workers, keeps the
server every test and benchmark runs (websockets, SSE and our threaded HTTP handler behave the
same with one process or many) and adds no dependency.

Each process has its own connection pools and embedding model, and is told how many CPU threads
its batch embeddings may use (cores / N, at least one) so the processes do not fight over the
cores; a search query's embedding uses MEMORY_EMBEDDING_QUERY_THREADS (1) in every process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from prometheus_client import multiprocess

logger = logging.getLogger(__name__)

STOP_TIMEOUT_SECONDS = 15
RESTART_DELAY_SECONDS = 1.0


def how_many(asked: int | None, *, redis: bool) -> int:
    """The number of server processes: as asked, else one per core when a Redis channel layer
    can carry events between processes, else one."""
    if asked is not None:
        if asked < 1:
            raise ValueError("--workers must be at least 1")
        return asked
    return max(1, os.cpu_count() or 1) if redis else 1


def share_metrics(directory: Path) -> None:
    """Every process (servers and the job worker) writes its metrics files in `directory`
    (prometheus-client's multiprocess mode), so any server's /metrics covers all of them."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)


def serve(host: str, port: int, workers: int) -> None:
    """Bind `host:port`, run `workers` daphne processes on it until a signal ends this one."""
    listener = _bind(host, port)
    processes: dict[int, subprocess.Popen[bytes]] = {}
    try:
        for _ in range(workers):
            _start(listener, processes, workers)
        while True:
            time.sleep(RESTART_DELAY_SECONDS)
            for pid, process in list(processes.items()):
                if process.poll() is not None:
                    logger.warning(
                        "server process %s exited (%s); starting another", pid, process.returncode
                    )
                    del processes[pid]
                    _forget_metrics(pid)
                    _start(listener, processes, workers)
    finally:
        _stop(processes.values())
        listener.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.set_inheritable(True)
    return listener


def _start(
    listener: socket.socket, processes: dict[int, subprocess.Popen[bytes]], workers: int
) -> None:
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    fd = listener.fileno()
    # the composition root's ASGI application, as settings name it ("package.module:name")
    module, _, name = settings.ASGI_APPLICATION.rpartition(".")
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "--fd", str(fd), f"{module}:{name}"],
        env=env,
        pass_fds=(fd,),
    )
    processes[process.pid] = process


def _stop(processes: object) -> None:
    running = [p for p in processes if p.poll() is None]  # type: ignore[attr-defined]
    for process in running:
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    for process in running:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        if process.poll() is None:
            process.kill()
            process.wait()
        _forget_metrics(process.pid)


def _forget_metrics(pid: int) -> None:
    """A dead process's live gauges (open connections) must not count any more."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        with contextlib.suppress(Exception):
            multiprocess.mark_process_dead(pid)
