"""Aggregate reads for dashboards and the stats tools. Every function takes `project=`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Avg, Count, Max, Min, Q

from analytics.models import ToolFeedback
from entities.models import Entity, Relation
from memories.models import Memory, MemoryLink
from memories.selectors.filters import effective_confidence
from tenants.models import Project

LOW_CONFIDENCE = 0.3  # memories an agent should no longer rely on without checking


def _count_graph(project: Project, model_name: str) -> int:
    """The project's entities or relations."""
    model = {"Entity": Entity, "Relation": Relation}[model_name]
    return model.objects.filter(project=project).count()


def memory_stats(*, project: Project) -> dict[str, Any]:
    """Counts and averages over the project's live memories (the SQL-native server's
    get_memory_stats, Memento's memory_stats): totals, by type and state, confidence,
    embedding coverage."""
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
    }


def _counts(queryset: Any, field: str) -> dict[str, int]:
    rows = queryset.order_by().values(field).annotate(n=Count("id"))
    return {row[field]: row["n"] for row in rows}


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def tool_feedback_summary(*, project: Project) -> dict[str, dict[str, Any]]:
    """Per tool: how many reports, and the share that found results relevant / sufficient."""
    rows = (
        ToolFeedback.objects.filter(project=project)
        .order_by()
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
    from django.db.models.functions import Trunc
    from django.utils import timezone

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
    from django.db.models import F, Func

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
    from django.db.models import Func, IntegerField, Value

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
