"""Reads of memory quality: the utility factor in ranking, and the lifecycle and utility
figures of the stats (Memento's `memory_stats`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Avg, Case, CharField, Count, F, Q, Value, When
from django.db.models.functions import Coalesce, Now
from django.db.models.lookups import GreaterThan

from memories.models import PERMANENT_IMPORTANCE, Memory, MemoryState
from tenants.models import Project

NEUTRAL_UTILITY = 0.5  # a memory nobody assessed yet
TIERS = ("hot", "warm", "cold", "permanent")


def rank_factor(utility: float | None) -> float:
    """The search multiplier of a memory's utility: 1 at the neutral 0.5, within
    1 ± MEMORY_UTILITY_RANK_WEIGHT / 2 at the ends. The one place utility touches ranking."""
    value = NEUTRAL_UTILITY if utility is None else float(utility)
    return 1.0 + settings.MEMORY_UTILITY_RANK_WEIGHT * (value - NEUTRAL_UTILITY)


def _tier() -> Case:
    """Memento's TTL tier of a memory, from our lifecycle: permanent (pinned, a preference or
    importance >= 0.8, a preservation tag), hot (created or read within the grace window),
    cold (archived), warm (the rest: active and dormant), as docs/intelligence.md maps them."""
    from datetime import timedelta

    from memories.services.lifecycle import PRESERVATION_TAGS

    grace = timedelta(days=settings.MEMORY_DECAY_GRACE_DAYS)
    last_touch = Coalesce(F("last_accessed_at"), F("created_at"))
    return Case(
        When(
            Q(pinned=True)
            | Q(memory_type="preference")
            | Q(importance__gte=PERMANENT_IMPORTANCE)
            | Q(tags__overlap=PRESERVATION_TAGS),
            then=Value("permanent"),
        ),
        When(GreaterThan(last_touch, Now() - grace), then=Value("hot")),
        When(state=MemoryState.ARCHIVED, then=Value("cold")),
        default=Value("warm"),
        output_field=CharField(),
    )


def quality_stats(*, project: Project) -> dict[str, Any]:
    """The distribution of the project's live memories by lifecycle tier, the mean utility
    score (of every memory, and of those assessed), and how many were assessed."""
    live = Memory.objects.for_project(project).alive()
    by_tier = {tier: 0 for tier in TIERS}
    rows = live.annotate(tier=_tier()).order_by().values("tier").annotate(n=Count("id"))
    by_tier.update({row["tier"]: row["n"] for row in rows})
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
