"""What `/metrics` reads from the database when it is scraped: the job queue and the memory
store by lifecycle state.

These are operator figures across every project (the endpoint is not a tenant's: see
`metrics_view` for who may read it). They are computed at scrape time instead of being kept
up to date by every write, and the store's counts are remembered for STORE_TTL_SECONDS, so a
scrape every 15 s costs one grouped count a minute, however large the store.

Cardinality: memories are labelled by project slug for the TOP-N projects by live memories
(MEMORY_METRICS_TOP_PROJECTS, default 20); every other project is summed into
`project="_other"`. A series count of (N + 1) × 5 states, whatever the number of tenants.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Min
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from memories.models import Memory
from platformcore.lib.project_scope import all_projects

STORE_TTL_SECONDS = 60.0
OTHER_PROJECTS = "_other"


@dataclass(frozen=True)
class QueueBacklog:
    waiting: int  # jobs enqueued that no worker has taken
    running: int | None  # taken and not finished (None: the broker does not tell)
    oldest_waiting_seconds: float | None  # None: empty queue, or the broker does not tell


def queue_backlog() -> QueueBacklog:
    """The django-q2 queue as the broker sees it. The ORM broker keeps jobs in a table: a job
    taken by a worker is locked until `retry` seconds from then, so a row whose lock is in the
    past is waiting, and its lock is when it was enqueued (or when its worker's claim ran
    out). Redis tells only the length of its list."""
    broker = get_broker()
    if "redis" in settings.Q_CLUSTER:
        return QueueBacklog(waiting=broker.queue_size(), running=None, oldest_waiting_seconds=None)

    now = timezone.now()
    queue = OrmQ.objects.filter(key=broker.list_key)
    waiting = queue.filter(lock__lte=now).aggregate(n=Count("id"), oldest=Min("lock"))
    oldest = waiting["oldest"]
    return QueueBacklog(
        waiting=waiting["n"],
        running=queue.filter(lock__gt=now).count(),
        oldest_waiting_seconds=(now - oldest).total_seconds() if oldest else None,
    )


class QueueCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        backlog = queue_backlog()
        jobs = GaugeMetricFamily(
            "memory_queue_jobs", "Background jobs in the queue, by state.", labels=["state"]
        )
        jobs.add_metric(["waiting"], backlog.waiting)
        if backlog.running is not None:
            jobs.add_metric(["running"], backlog.running)
        yield jobs
        if backlog.oldest_waiting_seconds is not None or backlog.running is not None:
            yield GaugeMetricFamily(
                "memory_queue_oldest_waiting_seconds",
                "How long the oldest waiting job has waited (0: none waits).",
                value=backlog.oldest_waiting_seconds or 0.0,
            )


class MemoryStateCollector(Collector):
    """Live memories by project and lifecycle state (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[float, list[tuple[str, str, int]]] | None = None

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "memory_memories",
            "Live memories by project (top N by count, the rest as _other) and state.",
            labels=["project", "state"],
        )
        for project, state, count in self._counts():
            family.add_metric([project, state], count)
        yield family

    def _counts(self) -> list[tuple[str, str, int]]:
        with self._lock:
            if self._cached is None or time.monotonic() - self._cached[0] > STORE_TTL_SECONDS:
                top = settings.MEMORY_METRICS_TOP_PROJECTS
                self._cached = (time.monotonic(), memories_by_state(top))
            return self._cached[1]


def memories_by_state(top: int) -> list[tuple[str, str, int]]:
    """(project slug or _other, state, live memories), the `top` largest projects named."""
    with all_projects("metrics: memories by project and state", routine=True):
        rows = list(
            Memory.objects.filter(deleted_at__isnull=True)
            .values_list("project__slug", "state")
            .annotate(n=Count("id"))
            .order_by()
        )
    totals: dict[str, int] = {}
    for slug, _state, n in rows:
        totals[slug] = totals.get(slug, 0) + n
    named = set(sorted(totals, key=lambda slug: (-totals[slug], slug))[:top])
    merged: dict[tuple[str, str], int] = {}
    for slug, state, n in rows:
        key = (slug if slug in named else OTHER_PROJECTS, state)
        merged[key] = merged.get(key, 0) + n
    return [(project, state, n) for (project, state), n in sorted(merged.items())]


_memory_states = MemoryStateCollector()


def collectors() -> list[Collector]:
    return [QueueCollector(), _memory_states]
