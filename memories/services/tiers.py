"""Memento's TTL tiers, stored per memory, and its per-type stale thresholds.

A memory's tier is inferred when it is written (`models.infer_ttl_tier`: a preference or
importance >= 0.8 permanent, an error or a procedure hot, importance >= 0.5 warm, the rest
cold) and moves with use: a read brings a warm or cold memory back to hot (reinforcement),
and the decay job demotes the unread ones (`memories_demote_tiers`):

- hot -> warm: unread for the grace window (MEMORY_DECAY_GRACE_DAYS, 7 days);
- warm -> cold: unread for half its type's stale threshold.

Stale thresholds are days without access before cold-tier expiry (Memento: procedure 30,
fact 60, decision 90, any other type 60; a project's `stale_thresholds` overrides any of
them). Expiry is opt-in (`tier_expiry`, project setting or MEMORY_TIER_EXPIRY): the platform's
promise is that decay ranks and only the prune rule removes; a project that asks for
Memento's expiry gets its cold memories unread for their whole threshold added to the prune
job's candidates (`stale_q`), listed first. Pinned memories (Memento's anchors), preserved
ones and the permanent tier are never demoted nor expired.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Coalesce

from memories.models import Memory, MemoryType, TtlTier
from memories.services.tuning import tuning
from platformcore.lib.errors import InvalidInput
from tenants.models import Project

DEFAULT_KEY = "default"
STALE_REASON = "stale"


def stale_thresholds(project: Project) -> dict[str, float]:
    """Days without access before cold-tier expiry, by memory type (and "default"): the
    defaults with the project's `stale_thresholds` over them."""
    given = tuning(project, "stale_thresholds")
    merged: dict[str, Any] = {**settings.MEMORY_STALE_THRESHOLDS}
    if isinstance(given, dict) and given is not settings.MEMORY_STALE_THRESHOLDS:
        merged.update(given)
    elif not isinstance(given, dict):
        raise _invalid("stale_thresholds must be an object of days by memory type")
    known = {*MemoryType.values, DEFAULT_KEY}
    for name, days in merged.items():
        if name not in known:
            raise _invalid(f"stale_thresholds: unknown memory type {name!r}")
        if isinstance(days, bool) or not isinstance(days, int | float) or days <= 0:
            raise _invalid(f"stale_thresholds.{name} must be a number of days above 0")
    return {name: float(days) for name, days in merged.items()}


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, fields={"stale_thresholds": [message]})


def tier_expiry(project: Project) -> bool:
    return bool(tuning(project, "tier_expiry"))


def _unread_for(now: datetime, thresholds: dict[str, float], share: float) -> Q:
    """Memories unread for `share` of their type's stale threshold."""
    default = thresholds[DEFAULT_KEY]
    typed = {name: days for name, days in thresholds.items() if name != DEFAULT_KEY}
    condition = Q(touched__lt=now - timedelta(days=default * share)) & ~Q(memory_type__in=typed)
    for name, days in typed.items():
        condition |= Q(memory_type=name, touched__lt=now - timedelta(days=days * share))
    return condition


def _demotable(project: Project, now: datetime) -> Any:
    """The project's live memories the tiers may move: not pinned, not preserved."""
    # lifecycle runs the tiers (this module) in its decay pass: this import closes a loop
    from memories.services.lifecycle import PRESERVATION_TAGS

    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return (
        Memory.objects.for_project(project, namespaced=False)
        .alive()
        .filter(pinned=False)
        .exclude(tags__overlap=PRESERVATION_TAGS)
        .exclude(Q(metadata__has_key="preserved_until") & Q(metadata__preserved_until__gt=stamp))
        .alias(touched=Coalesce("last_accessed_at", "created_at"))
    )


def memories_demote_tiers(*, project: Project, now: datetime) -> dict[str, int]:
    """Hot memories unread for the grace window become warm, warm ones unread for half their
    stale threshold cold; {"hot>warm": n, "warm>cold": n}."""
    grace = now - timedelta(days=settings.MEMORY_DECAY_GRACE_DAYS)
    memories = _demotable(project, now)
    cooled = memories.filter(ttl_tier=TtlTier.HOT, touched__lt=grace).update(ttl_tier=TtlTier.WARM)
    stale = _unread_for(now, stale_thresholds(project), 0.5)
    chilled = memories.filter(stale, ttl_tier=TtlTier.WARM).update(ttl_tier=TtlTier.COLD)
    return {"hot>warm": cooled, "warm>cold": chilled}


def stale_q(project: Project, now: datetime) -> Q:
    """With the project's `tier_expiry` on: cold memories unread for their whole stale
    threshold (prune candidates, as Memento's cold-tier expiry); otherwise nothing. Expects
    a queryset with `touched` (last access, else creation) aliased and the exemptions of the
    prune rule applied."""
    if not tier_expiry(project):
        return Q(pk__in=[])
    return Q(ttl_tier=TtlTier.COLD) & _unread_for(now, stale_thresholds(project), 1.0)
