"""Memory filters shared by list and search: one translation to SQL, never Python filtering."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import F, FloatField, Func, Q, QuerySet, Value
from django.db.models.functions import Coalesce, Now

from memories.models import Memory

ALL_STATES = "all"


@dataclass
class MemoryFilters:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    memory_types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    source: str | None = None
    states: list[str] = field(default_factory=lambda: ["active"])
    created_after: datetime | None = None
    created_before: datetime | None = None
    min_confidence: float | None = None
    pinned: bool | None = None
    expression: dict[str, Any] | None = None  # seed-003 AND/OR/NOT filter language

    def as_q(self) -> Q:
        q = Q()
        for name in ("user_id", "agent_id", "run_id", "source", "pinned"):
            value = getattr(self, name)
            if value is not None and value != "":
                q &= Q(**{name: value})
        if self.memory_types:
            q &= Q(memory_type__in=self.memory_types)
        if self.tags:
            q &= Q(tags__contains=self.tags)
        if self.states and ALL_STATES not in self.states:
            q &= Q(state__in=self.states)
        if self.created_after:
            q &= Q(created_at__gte=self.created_after)
        if self.created_before:
            q &= Q(created_at__lt=self.created_before)
        if self.expression is not None:
            from memories.selectors.filter_language import filter_expression_q

            q &= filter_expression_q(self.expression)
        return q


class _Power(Func):
    function = "POWER"
    output_field = FloatField()


class _EpochSeconds(Func):
    template = "EXTRACT(EPOCH FROM %(expressions)s)"
    output_field = FloatField()


def effective_confidence() -> _Power:
    """confidence × 0.5^(seconds since last access / half-life), computed by PostgreSQL."""
    half_life_seconds = settings.MEMORY_DECAY_HALF_LIFE_DAYS * 86400.0
    age = _EpochSeconds(Now() - Coalesce(F("last_accessed_at"), F("created_at")))
    return F("confidence") * _Power(Value(0.5), age / Value(half_life_seconds))  # type: ignore[return-value]


def effective_confidence_of(memory: Memory) -> float:
    """The same decay as `effective_confidence()`, for a memory already in hand."""
    from django.utils import timezone

    since = memory.last_accessed_at or memory.created_at
    days = max((timezone.now() - since).total_seconds(), 0.0) / 86400.0
    return memory.confidence * 0.5 ** (days / settings.MEMORY_DECAY_HALF_LIFE_DAYS)


def apply_filters(queryset: QuerySet[Memory], filters: MemoryFilters) -> QuerySet[Memory]:
    queryset = queryset.filter(filters.as_q()).annotate(effective_confidence=effective_confidence())
    if filters.min_confidence is not None:
        queryset = queryset.filter(effective_confidence__gte=filters.min_confidence)
    return queryset
