"""Reads of memory quality: the utility factor in ranking, and the lifecycle and utility
figures of the stats (Memento's `memory_stats`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, Q

from memories.models import Memory, TtlTier
from tenants.models import Project

NEUTRAL_UTILITY = 0.5  # a memory nobody assessed yet
TIERS = tuple(TtlTier.values)


def rank_factor(utility: float | None) -> float:
    """The search multiplier of a memory's utility: 1 at the neutral 0.5, within
    1 ± MEMORY_UTILITY_RANK_WEIGHT / 2 at the ends. The one place utility touches ranking."""
    value = NEUTRAL_UTILITY if utility is None else float(utility)
    return 1.0 + settings.MEMORY_UTILITY_RANK_WEIGHT * (value - NEUTRAL_UTILITY)


def quality_stats(*, project: Project) -> dict[str, Any]:
    """The distribution of the project's live memories by TTL tier (stored, Memento's), the
    mean utility score (of every memory, and of those assessed), and how many were assessed."""
    live = Memory.objects.for_project(project).alive()
    by_tier = {tier: 0 for tier in TIERS}
    rows = live.order_by().values("ttl_tier").annotate(n=Count("id"))
    by_tier.update({row["ttl_tier"]: row["n"] for row in rows})
    totals = live.aggregate(
        mean=Avg("utility_score"),
        assessed=Count("id", filter=Q(verified_at__isnull=False)),
        assessed_mean=Avg("utility_score", filter=Q(verified_at__isnull=False)),
        compressed=Count("id", filter=Q(compressed=True)),
    )
    return {
        "memories_by_tier": by_tier,
        "mean_utility": _round(totals["mean"]),
        "mean_assessed_utility": _round(totals["assessed_mean"]),
        "utility_assessed_count": totals["assessed"],
        "compressed_count": totals["compressed"],
    }


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None
