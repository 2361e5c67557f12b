"""Aggregate reads for dashboards and the stats tools. Every function takes `project=`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Avg, Count, F, Func, IntegerField, Max, Min, Q, Value
from django.db.models.functions import Trunc
from django.utils import timezone

from analytics.models import LATENCY_BOUNDS_MS, SearchStat, ToolFeedback
from entities.models import Entity, Relation
from memories.models import Memory, MemoryLink
from memories.selectors.filters import effective_confidence
from memories.selectors.quality import quality_stats
from tenants.models import Project

LOW_CONFIDENCE = 0.3  # memories an agent should no longer rely on without checking
CACHE_SECONDS = 30  # dashboards and the stats endpoints may lag the store this much


def _count_graph(project: Project, model_name: str) -> int:
    """The project's entities or relations."""
    model = {"Entity": Entity, "Relation": Relation}[model_name]
    return model.objects.filter(project=project).count()


def memory_stats(*, project: Project) -> dict[str, Any]:
    """Counts and averages over the project's live memories (the SQL-native server's
    get_memory_stats, Memento's memory_stats): totals, by type, state and tier, confidence,
    utility, embedding coverage."""
    live = Memory.objects.for_project(project).alive()
    totals = live.annotate(effective=effective_confidence()).aggregate(
        total=Count("id"),
        embedded=Count("id", filter=Q(embedding__isnull=False)),
        pinned=Count("id", filter=Q(pinned=True)),
        average_confidence=Avg("confidence"),
        average_effective_confidence=Avg("effective"),
        low_confidence=Count("id", filter=Q(effective__lt=LOW_CONFIDENCE)),
        oldest=Min("created_at"),
        newest=Max("created_at"),
    )
    total = totals["total"]
    return {
        "total_memories": total,
        "total_entities": _count_graph(project, "Entity"),
        "total_relations": _count_graph(project, "Relation"),
        "total_memory_links": MemoryLink.objects.filter(project=project).count(),
        "memories_by_type": _counts(live, "memory_type"),
        "memories_by_state": _counts(live, "state"),
        "pinned_count": totals["pinned"],
        "average_confidence": _round(totals["average_confidence"]),
        "average_effective_confidence": _round(totals["average_effective_confidence"]),
        "low_confidence_count": totals["low_confidence"],
        "embedding_coverage": _round(totals["embedded"] / total) if total else None,
        "oldest_memory": totals["oldest"].isoformat() if totals["oldest"] else None,
        "newest_memory": totals["newest"].isoformat() if totals["newest"] else None,
        "tool_feedback": tool_feedback_summary(project=project),
        # Memento's TTL tiers, the mean utility score, compressed archives
        **quality_stats(project=project),
    }


def _counts(queryset: Any, field: str) -> dict[str, int]:
    rows = queryset.order_by().values(field).annotate(n=Count("id"))
    return {row[field]: row["n"] for row in rows}


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def tool_feedback_summary(*, project: Project, since: Any = None) -> dict[str, dict[str, Any]]:
    """Per tool: how many reports, and the share that found results relevant / sufficient
    (all of them, or those since `since`)."""
    reports = ToolFeedback.objects.filter(project=project)
    if since is not None:
        reports = reports.filter(created_at__gte=since)
    rows = (
        reports.order_by()
        .values("tool_name")
        .annotate(
            reports=Count("id"),
            relevant=Count("id", filter=Q(relevant=True)),
            sufficient=Count("id", filter=Q(sufficient=True)),
        )
    )
    return {
        row["tool_name"]: {
            "reports": row["reports"],
            "relevant_rate": _round(row["relevant"] / row["reports"]),
            "sufficient_rate": _round(row["sufficient"] / row["reports"]),
        }
        for row in rows
    }


GROWTH_INTERVALS = ("day", "week", "month")


def memory_growth(
    *, project: Project, interval: str = "day", days: int = 30
) -> list[dict[str, Any]]:
    """Memories created per day/week/month over the last `days` days (live memories)."""
    since = timezone.now() - timedelta(days=days)
    rows = (
        Memory.objects.for_project(project)
        .alive()
        .filter(created_at__gte=since)
        .annotate(period=Trunc("created_at", interval))
        .order_by("period")
        .values("period")
        .annotate(count=Count("id"))
    )
    return [{"period": row["period"].date().isoformat(), "count": row["count"]} for row in rows]


def tag_frequency(*, project: Project, limit: int = 50) -> list[dict[str, Any]]:
    """Most used tags over live memories, most frequent first (unnested in PostgreSQL)."""
    rows = (
        Memory.objects.for_project(project)
        .alive()
        .annotate(tag=Func(F("tags"), function="unnest"))
        .order_by()
        .values("tag")
        .annotate(count=Count("id"))
        .order_by("-count", "tag")[:limit]
    )
    return [{"tag": row["tag"], "count": row["count"]} for row in rows]


def confidence_histogram(*, project: Project, buckets: int = 10) -> list[dict[str, Any]]:
    """How many live memories fall in each effective-confidence bucket of [0, 1]."""
    bucket = Func(
        effective_confidence(),
        Value(0.0),
        Value(1.0 + 1e-9),
        Value(buckets),
        function="width_bucket",
        output_field=IntegerField(),
    )
    rows = (
        Memory.objects.for_project(project)
        .alive()
        .annotate(bucket=bucket)
        .order_by()
        .values("bucket")
        .annotate(count=Count("id"))
    )
    counts = {row["bucket"]: row["count"] for row in rows}
    width = 1.0 / buckets
    return [
        {
            "from": round(index * width, 4),
            "to": round((index + 1) * width, 4),
            "count": counts.get(index + 1, 0),
        }
        for index in range(buckets)
    ]


# --- search statistics ---------------------------------------------------------------------


def search_statistics(*, project: Project, days: int = 30) -> dict[str, Any]:
    """Searches per day over the last `days` days (UTC), with the empty-result rate and
    latency percentiles per day, per mode and overall (from the rolling SearchStat table).
    Cached for CACHE_SECONDS."""
    key = f"analytics:search:{project.pk}:{days}"
    found = cache.get(key)
    if found is None:
        found = _search_statistics(project, days)
        cache.set(key, found, CACHE_SECONDS)
    return found


def _search_statistics(project: Project, days: int) -> dict[str, Any]:
    since = timezone.now().date() - timedelta(days=days - 1)
    rows = list(SearchStat.objects.filter(project=project, day__gte=since).order_by("day"))
    by_day: dict[str, list[SearchStat]] = {}
    by_mode: dict[str, list[SearchStat]] = {}
    for row in rows:
        by_day.setdefault(row.day.isoformat(), []).append(row)
        by_mode.setdefault(row.mode, []).append(row)
    return {
        "days": days,
        "total": search_totals(rows),
        "by_mode": {mode: search_totals(group) for mode, group in sorted(by_mode.items())},
        "per_day": [{"day": day, **search_totals(group)} for day, group in by_day.items()],
    }


def search_totals(rows: list[Any]) -> dict[str, Any]:
    """Counts, empty-result rate and latency percentiles of SearchStat rows taken together."""
    width = len(LATENCY_BOUNDS_MS) + 1
    buckets = [0] * width
    searches = empty = cached = 0
    total_ms = max_ms = 0.0
    for row in rows:
        searches += row.searches
        empty += row.empty_results
        cached += row.cached
        total_ms += row.latency_total_ms
        max_ms = max(max_ms, row.latency_max_ms)
        for index, count in enumerate(row.latency_buckets[:width]):
            buckets[index] += count
    return {
        "searches": searches,
        "empty_results": empty,
        "empty_rate": _round(empty / searches) if searches else None,
        "cached": cached,
        "cache_hit_rate": _round(cached / searches) if searches else None,
        "latency_ms": {
            "average": round(total_ms / searches, 2) if searches else None,
            "p50": latency_percentile(buckets, 0.5, max_ms),
            "p95": latency_percentile(buckets, 0.95, max_ms),
            "p99": latency_percentile(buckets, 0.99, max_ms),
            "max": round(max_ms, 2) if searches else None,
        },
    }


def latency_percentile(buckets: list[int], share: float, max_ms: float) -> float | None:
    """The latency below which `share` of the searches fell, interpolated linearly inside the
    histogram bucket that holds it; no bucket reaches past the largest latency seen."""
    total = sum(buckets)
    if not total:
        return None
    rank, seen = share * total, 0
    for index, count in enumerate(buckets):
        if count and seen + count >= rank:
            low = float(LATENCY_BOUNDS_MS[index - 1]) if index else 0.0
            high = float(LATENCY_BOUNDS_MS[index]) if index < len(LATENCY_BOUNDS_MS) else max_ms
            high = max(min(high, max_ms), low)
            return round(low + (high - low) * (rank - seen) / count, 2)
        seen += count
    return round(max_ms, 2)


# --- graph and feedback ----------------------------------------------------------------------


def relation_distribution(*, project: Project) -> dict[str, Any]:
    """Relations by type, each split into open (valid now) and closed (ended or invalidated)."""
    now = timezone.now()
    is_open = Q(valid_to__isnull=True) | Q(valid_to__gt=now)
    rows = (
        Relation.objects.filter(project=project)
        .order_by()
        .values("relation_type")
        .annotate(open=Count("id", filter=is_open), closed=Count("id", filter=~is_open))
        .order_by("relation_type")
    )
    by_type = {row["relation_type"]: {"open": row["open"], "closed": row["closed"]} for row in rows}
    return {
        "by_type": by_type,
        "open": sum(row["open"] for row in by_type.values()),
        "closed": sum(row["closed"] for row in by_type.values()),
    }


def tool_feedback_report(*, project: Project, days: int = 30) -> dict[str, Any]:
    """Per tool over the last `days` days: reports, relevant and sufficient rates, by trigger,
    and the latest suggestions agents left."""
    since = timezone.now() - timedelta(days=days)
    recent = ToolFeedback.objects.filter(project=project, created_at__gte=since)
    tools = tool_feedback_summary(project=project, since=since)
    suggestions = list(
        recent.exclude(suggestion="").values("tool_name", "suggestion", "created_at")[:10]
    )
    return {
        "days": days,
        "reports": sum(tool["reports"] for tool in tools.values()),
        "by_trigger": _counts(recent, "trigger_type"),
        "tools": tools,
        "suggestions": [
            {**row, "created_at": row["created_at"].isoformat()} for row in suggestions
        ],
    }
