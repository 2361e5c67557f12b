"""Memory filters shared by list and search: one translation to SQL, never Python filtering."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import F, FloatField, Func, Q, QuerySet, Value
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from memories.models import Memory, namespace_q
from platformcore.lib.errors import InvalidInput
from platformcore.lib.hooks import provider
from tenants.models import Project
from tenants.namespaces import current_namespace

ALL_STATES = "all"
MAX_ENTITY_FILTERS = 20  # each is one subquery; a longer conjunction is not a real query
MAX_ENTITY_ID = 2**63 - 1  # bigint: a larger id is malformed, not merely unknown


@dataclass
class MemoryFilters:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    memory_types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    source: str | None = None
    # lifecycle states to keep; empty (the default) or "all": every state of a live memory.
    # Decay ranks memories (their effective confidence), it never hides them.
    states: list[str] = field(default_factory=list)
    created_after: datetime | None = None
    created_before: datetime | None = None
    min_confidence: float | None = None  # decay-aware (effective) confidence
    min_stored_confidence: float | None = None  # the writer's confidence, whatever the age
    pinned: bool | None = None
    # knowledge-graph entities the memory is linked to (EntityMemory); all must match
    entity_ids: list[int] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)  # names or aliases, case-insensitive
    expression: dict[str, Any] | None = None  # mem0-style AND/OR/NOT filter language
    layers: list[str] = field(default_factory=list)  # short_term, long_term... (any of them)
    episode_id: Any = None  # stored during this episode
    # the agent reading, with agent namespaces on (tenants/namespaces.py): its own memories and
    # the shared pool; an `agent_id` equal to it named the reader, it is no exact filter then
    namespace: str | None = None
    # the caller's session: the working memory of other sessions (their runs' short-term
    # memories) is left out (docs/episodes.md, "Working memory")
    session_id: str | None = None

    def as_q(self, *, project: Project | None = None) -> Q:
        """The filters as one Q. Pass the project the memories belong to so entity names are
        resolved to its entity ids first (better plans); without it they are matched in SQL."""
        q = Q()
        for name in ("user_id", "agent_id", "run_id", "source", "pinned"):
            value = getattr(self, name)
            if name == "agent_id" and self.namespace and value == self.namespace:
                continue
            if value is not None and value != "":
                q &= Q(**{name: value})
        if self.namespace:
            q &= namespace_q(self.namespace)
        if self.session_id:
            q &= ~Q(layer="short_term") | Q(run_id=self.session_id)
        if self.memory_types:
            q &= Q(memory_type__in=self.memory_types)
        if self.layers:
            q &= Q(layer__in=self.layers)
        if self.episode_id:
            q &= Q(episode_id=self.episode_id)
        if self.tags:
            q &= Q(tags__contains=self.tags)
        if self.states and ALL_STATES not in self.states:
            q &= Q(state__in=self.states)
        if self.min_stored_confidence is not None:
            q &= Q(confidence__gte=self.min_stored_confidence)
        if self.created_after:
            q &= Q(created_at__gte=self.created_after)
        if self.created_before:
            q &= Q(created_at__lt=self.created_before)
        for entity_id in check_entity_ids(self.entity_ids, "entity_ids"):
            q &= linked_to_entity_ids([entity_id])
        for name in check_entity_names(self.entities, "entities"):
            q &= linked_to_entity_names([name], project=project)
        if self.expression is not None:
            # imported here: filter_language imports this module (cycle)
            from memories.selectors.filter_language import filter_expression_q

            q &= filter_expression_q(self.expression, project=project)
        return q


def with_namespace(filters: MemoryFilters) -> MemoryFilters:
    """`filters` carrying the calling code's namespace, so it travels with them (to a second
    thread, into cache keys)."""
    namespace = current_namespace()
    if namespace is None or filters.namespace is not None:
        return filters
    return replace(filters, namespace=namespace.agent)


def linked_to_entity_ids(ids: list[int]) -> Q:
    """Memories linked to any of these knowledge-graph entities (the `entity_filter` hook)."""
    return _entity_filter()(ids=ids)


def linked_to_entity_names(names: list[str], *, project: Project | None = None) -> Q:
    """Memories linked to any entity with one of these names or aliases; given the project,
    the names are resolved to its entity ids first (better plans)."""
    return _entity_filter()(names=names, project=project)


def _entity_filter() -> Any:
    linked = provider("entity_filter")
    if linked is None:
        message = "filtering by entity needs the knowledge graph, not installed here"
        raise InvalidInput(message, fields={"entities": [message]})
    return linked


def check_entity_ids(values: Any, field_name: str) -> list[int]:
    """Entity ids from any caller; a malformed one is a 400 naming `field_name`."""
    ids = _entity_list(values, field_name)
    for value in ids:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ENTITY_ID:
            raise _invalid(field_name, "entity ids are positive integers")
    return list(dict.fromkeys(ids))


def check_entity_names(values: Any, field_name: str) -> list[str]:
    names = _entity_list(values, field_name)
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise _invalid(field_name, "entity names are non-empty strings")
    return list(dict.fromkeys(names))


def _entity_list(values: Any, field_name: str) -> list[Any]:
    if not isinstance(values, list | tuple):
        raise _invalid(field_name, "must be a list")
    if len(values) > MAX_ENTITY_FILTERS:
        raise _invalid(field_name, f"at most {MAX_ENTITY_FILTERS} entities")
    return list(values)


def _invalid(field_name: str, message: str) -> InvalidInput:
    return InvalidInput(f"{field_name}: {message}", fields={field_name: [message]})


class _Power(Func):
    function = "POWER"
    output_field = FloatField()


class _EpochSeconds(Func):
    # float8, not the numeric EXTRACT returns: the decay is computed for every row an exact
    # ranking reads (a small project's semantic search ranks all its memories), and in numeric
    # it made a small project's ranking four times slower.
    template = "EXTRACT(EPOCH FROM %(expressions)s)::float8"
    output_field = FloatField()


def effective_confidence() -> _Power:
    """confidence × 0.5^(seconds since last access / half-life), computed by PostgreSQL."""
    half_life_seconds = settings.MEMORY_DECAY_HALF_LIFE_DAYS * 86400.0
    age = _EpochSeconds(Now() - Coalesce(F("last_accessed_at"), F("created_at")))
    return F("confidence") * _Power(Value(0.5), age / Value(half_life_seconds))  # type: ignore[return-value]


def effective_confidence_of(memory: Memory) -> float:
    """The same decay as `effective_confidence()`, for a memory already in hand."""
    since = memory.last_accessed_at or memory.created_at
    days = max((timezone.now() - since).total_seconds(), 0.0) / 86400.0
    return memory.confidence * 0.5 ** (days / settings.MEMORY_DECAY_HALF_LIFE_DAYS)


def apply_filters(
    queryset: QuerySet[Memory], filters: MemoryFilters, *, project: Project | None = None
) -> QuerySet[Memory]:
    """`queryset` (one project's memories; pass that `project` too) narrowed by `filters`."""
    queryset = queryset.filter(filters.as_q(project=project)).annotate(
        effective_confidence=effective_confidence()
    )
    if filters.min_confidence is not None:
        queryset = queryset.filter(effective_confidence__gte=filters.min_confidence)
    return queryset
