"""Search statistics: every search a caller is answered (REST, MCP) counted per project, day
and mode, with its latency in a histogram and whether it found nothing.

The memory store tells us through the `search_completed` hook (memories.services.reading
calls it after each recall; analytics sits above memories, so never an import back). Recording
must cost the search nothing: the hook adds to a small in-process tally, and the tallies of the
next second are written as one upsert per (project, day, mode) on a thread of its own, as
reinforcement does. Inside a transaction (a test's rollback-wrapped database) the row is
written at once, in it. A crash loses at most one second of counts. Rows older than
MEMORY_ANALYTICS_SEARCH_DAYS are deleted once a day by the flush.
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from analytics.models import LATENCY_BOUNDS_MS, SearchStat
from platformcore.lib.deferred import DeferredWrites
from platformcore.lib.project_scope import all_projects
from tenants.models import Project

logger = logging.getLogger(__name__)

FLUSH_DELAY_S = 1.0
BUCKETS = len(LATENCY_BOUNDS_MS) + 1

# bucket by bucket, without a sub-query (Citus runs no sub-query inside an INSERT)
_BUCKET_SUMS = ", ".join(
    f"COALESCE(s.latency_buckets[{i}], 0) + COALESCE(EXCLUDED.latency_buckets[{i}], 0)"
    for i in range(1, BUCKETS + 1)
)
_UPSERT_SQL = f"""
INSERT INTO {SearchStat._meta.db_table} AS s
    (project_id, day, mode, searches, empty_results, cached, latency_total_ms, latency_max_ms,
     latency_buckets)
VALUES (%(project)s, %(day)s, %(mode)s, %(searches)s, %(empty)s, %(cached)s, %(total)s,
        %(max)s, %(buckets)s::integer[])
ON CONFLICT (project_id, day, mode) DO UPDATE SET
    searches = s.searches + EXCLUDED.searches,
    empty_results = s.empty_results + EXCLUDED.empty_results,
    cached = s.cached + EXCLUDED.cached,
    latency_total_ms = s.latency_total_ms + EXCLUDED.latency_total_ms,
    latency_max_ms = GREATEST(s.latency_max_ms, EXCLUDED.latency_max_ms),
    latency_buckets = ARRAY[{_BUCKET_SUMS}]
"""


@dataclass
class _Tally:
    searches: int = 0
    empty: int = 0
    cached: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * BUCKETS)

    def add(self, *, empty: bool, latency_ms: float, cached: bool = False) -> None:
        self.searches += 1
        self.empty += int(empty)
        self.cached += int(cached)
        self.total_ms += latency_ms
        self.max_ms = max(self.max_ms, latency_ms)
        self.buckets[bisect.bisect_left(LATENCY_BOUNDS_MS, latency_ms)] += 1


Key = tuple[int, date, str]  # project id, day (UTC), mode


def search_completed(
    *, project: Project, mode: str, hits: int, latency_ms: float, cached: bool = False
) -> None:
    """The `search_completed` hook: count one answered search (`cached`: from the result
    cache)."""
    key = (project.pk, timezone.now().date(), mode[:20])
    latency_ms = max(latency_ms, 0.0)
    if connection.in_atomic_block:
        tally = _Tally()
        tally.add(empty=hits == 0, latency_ms=latency_ms, cached=cached)
        _write({key: tally})
        return
    _queue.add(lambda tallies: _merge(tallies, key, hits == 0, latency_ms, cached))


def search_stats_flush() -> int:
    """Write every queued tally now (process exit, tests); returns the rows written."""
    return _queue.flush()


def search_stats_trim(*, today: date | None = None) -> int:
    """Delete the rows older than the rolling window; returns how many."""
    today = today or timezone.now().date()
    cutoff = today - timedelta(days=settings.MEMORY_ANALYTICS_SEARCH_DAYS)
    return SearchStat.objects.filter(day__lt=cutoff).delete()[0]


def _write(tallies: dict[Key, _Tally]) -> int:
    """Upsert the tallies of projects that still exist: one deleted since its searches loses
    its counts, and the other projects in the same write keep theirs (nothing queued: no
    statement, so a process exiting with no searches never touches its database)."""
    if not tallies:
        return 0
    existing = set(
        Project.objects.filter(pk__in={key[0] for key in tallies}).values_list("pk", flat=True)
    )
    tallies = {key: tally for key, tally in tallies.items() if key[0] in existing}
    if not tallies:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        for (project_id, day, mode), tally in tallies.items():
            cursor.execute(
                _UPSERT_SQL,
                {
                    "project": project_id,
                    "day": day,
                    "mode": mode,
                    "searches": tally.searches,
                    "empty": tally.empty,
                    "cached": tally.cached,
                    "total": tally.total_ms,
                    "max": tally.max_ms,
                    "buckets": tally.buckets,
                },
            )
    return len(tallies)


def _flush(tallies: dict[Key, _Tally]) -> int:
    """One write holds the tallies of every project searched in the interval; the first write
    of a day also trims the rows past the rolling window."""
    global _trimmed
    with all_projects("search statistics of queued searches", routine=True):
        written = _write(tallies)
        today = timezone.now().date()
        if written and _trimmed != today:
            _trimmed = today
            search_stats_trim(today=today)
    return written


def _merge(
    tallies: dict[Key, _Tally], key: Key, empty: bool, latency_ms: float, cached: bool
) -> None:
    tallies.setdefault(key, _Tally()).add(empty=empty, latency_ms=latency_ms, cached=cached)


_trimmed: date | None = None
_queue: DeferredWrites[dict[Key, _Tally]] = DeferredWrites(
    "search-stats", empty=dict, write=_flush, delay=lambda: FLUSH_DELAY_S
)
