"""Reads of entities and relations. Every function takes `project=`; those given a `scope`
see the project-wide graph and that scope's (entities.scope), without one every graph."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.contrib.postgres.search import TrigramWordSimilarity
from django.db.models import Case, Count, Q, QuerySet, Value, When
from django.utils import timezone
from pgvector.django import CosineDistance

from entities.models import Entity, EntityMemory, Relation
from entities.scope import GraphScope
from entities.services.entities import normalize_name, parse_entity_id
from memories.models import Memory
from memories.selectors.memories import memories_by_id, memory_get
from memories.services.embedding import embed_or_none
from platformcore.lib.errors import NotFound
from tenants.models import Project

NAME_MATCH_THRESHOLD = 0.3  # trigram word similarity below this is not a name match
SEMANTIC_MATCH_THRESHOLD = 0.3


def entity_queryset(*, project: Project, scope: GraphScope | None = None) -> QuerySet[Entity]:
    queryset = Entity.objects.for_project(project).defer("embedding")
    return queryset.filter(scope.visible_q()) if scope is not None else queryset


def entity_get(
    *, project: Project, entity_id: int | str, scope: GraphScope | None = None
) -> Entity:
    """An entity; given a scope, one it can see (another scope's entity is not found)."""
    queryset = entity_queryset(project=project, scope=scope)
    entity = queryset.filter(pk=parse_entity_id(entity_id)).first()
    if entity is None:
        raise NotFound("entity not found")
    return entity


def entity_find_by_name(
    *,
    project: Project,
    name: str,
    entity_type: str | None = None,
    scope: GraphScope | None = None,
) -> Entity | None:
    """The entity with this name or alias (exact, case-insensitive); the oldest if several.
    Given a scope, its own entity before a project-wide one."""
    queryset = entity_queryset(project=project, scope=scope)
    queryset = queryset.filter(lookup_keys__contains=[normalize_name(name)])
    if entity_type:
        queryset = queryset.filter(entity_type=entity_type)
    if scope is not None and not scope.is_shared:
        shared = Q(user_id__isnull=True, agent_id__isnull=True, run_id__isnull=True)
        own_first = Case(When(shared, then=Value(1)), default=Value(0))
        return queryset.order_by(own_first, "created_at", "id").first()
    return queryset.order_by("created_at", "id").first()


@dataclass(frozen=True)
class EntityPage:
    results: list[Entity]
    count: int
    limit: int
    offset: int


def entity_list(
    *,
    project: Project,
    query: str = "",
    entity_types: list[str] | None = None,
    match: Literal["name", "semantic"] = "name",
    limit: int = 20,
    offset: int = 0,
    scope: GraphScope | None = None,
    tags: list[str] | None = None,
) -> EntityPage:
    """Entities of the project (those a scope sees, carrying all `tags`), by name (exact
    names and aliases first, then trigram word similarity) or by meaning (embedding of name +
    description), or all alphabetically."""
    queryset = entity_queryset(project=project, scope=scope)
    if entity_types:
        queryset = queryset.filter(entity_type__in=entity_types)
    if tags:
        queryset = queryset.filter(tags__contains=tags)
    if query and match == "semantic":
        queryset = _by_meaning(queryset, query)
    elif query:
        queryset = _by_name(queryset, query)
    else:
        queryset = queryset.order_by("name", "id")
    queryset = queryset.annotate(
        relation_count=Count("relations_out", distinct=True) + Count("relations_in", distinct=True)
    )
    return EntityPage(list(queryset[offset : offset + limit]), queryset.count(), limit, offset)


def _by_name(queryset: QuerySet[Entity], query: str) -> QuerySet[Entity]:
    """Exact names and aliases first, then by trigram word similarity. Word similarity
    scores a name holding the query as one of its words as high as the exact name ("Alice"
    scores 1.0 in "Alice Chen" and "Alice's team"), and an alias none ("Bob" for "Robert
    Smith"): without the exact match first, the entity the query names could come after
    every longer name sharing one of its words."""
    key = normalize_name(query)
    exact = Q(lookup_keys__contains=[key])
    return (
        queryset.annotate(
            similarity=TrigramWordSimilarity(key, "normalized_name"),
            inexact=Case(When(exact, then=Value(0)), default=Value(1)),
        )
        .filter(exact | Q(normalized_name__icontains=key) | Q(similarity__gte=NAME_MATCH_THRESHOLD))
        .order_by("inexact", "-similarity", "name", "id")
    )


def _by_meaning(queryset: QuerySet[Entity], query: str) -> QuerySet[Entity]:
    vector = embed_or_none([query])[0]
    if vector is None:  # no embeddings available: fall back to names
        return _by_name(queryset, query)
    return (
        queryset.filter(embedding__isnull=False)
        .annotate(distance=CosineDistance("embedding", vector))
        .filter(distance__lte=1.0 - SEMANTIC_MATCH_THRESHOLD)
        .order_by("distance", "id")
    )


def entity_memories(
    *, project: Project, entity_id: int | str, limit: int = 20, offset: int = 0
) -> tuple[list[Memory], int]:
    """Live memories linked to an entity, most relevant then newest first."""
    entity = entity_get(project=project, entity_id=entity_id)
    links = (
        EntityMemory.objects.filter(project=project, entity=entity)
        .filter(memory__deleted_at__isnull=True)
        .order_by("-relevance", "-memory__created_at")
    )
    page = list(links.values_list("memory_id", "relevance")[offset : offset + limit])
    found = memories_by_id(project=project, ids=[p for p, _ in page])
    memories = []
    for memory_id, relevance in page:
        memory = found[memory_id]
        memory.relevance = relevance  # type: ignore[attr-defined]
        memories.append(memory)
    return memories, links.count()


def memory_entities(*, project: Project, memory_id: Any) -> list[Entity]:
    """Entities a live memory is linked to."""
    memory = memory_get(project=project, memory_id=memory_id)
    return list(
        entity_queryset(project=project)
        .filter(memory_links__memory=memory)
        .order_by("-memory_links__relevance", "name")
    )


def relation_queryset(*, project: Project, scope: GraphScope | None = None) -> QuerySet[Relation]:
    queryset = (
        Relation.objects.for_project(project)
        .select_related("source", "target")
        .defer("source__embedding", "target__embedding")
    )
    return queryset.filter(scope.visible_q()) if scope is not None else queryset


def relation_get(*, project: Project, relation_id: Any) -> Relation:
    try:
        pk = int(str(relation_id))
    except ValueError as exc:
        raise NotFound("relation not found") from exc
    relation = relation_queryset(project=project).filter(pk=pk).first()
    if relation is None:
        raise NotFound("relation not found")
    return relation


def relation_list(
    *,
    project: Project,
    entity_id: int | str | None = None,
    relation_types: list[str] | None = None,
    as_of: datetime | None = None,
    include_closed: bool = False,
    limit: int = 20,
    offset: int = 0,
    scope: GraphScope | None = None,
) -> tuple[list[Relation], int]:
    """Relations valid now (or `as_of` a moment), or every relation with `include_closed`;
    given a scope, those it sees."""
    queryset = relation_queryset(project=project, scope=scope)
    if entity_id is not None:
        pk = entity_get(project=project, entity_id=entity_id, scope=scope).pk
        queryset = queryset.filter(Q(source_id=pk) | Q(target_id=pk))
    if relation_types:
        queryset = queryset.filter(relation_type__in=relation_types)
    if not include_closed or as_of is not None:
        moment = as_of or timezone.now()
        queryset = queryset.filter(valid_from__lte=moment).filter(
            Q(valid_to__isnull=True) | Q(valid_to__gt=moment)
        )
    queryset = queryset.order_by("-created_at", "-id")
    return list(queryset[offset : offset + limit]), queryset.count()


def entity_relations(
    *, project: Project, entity: Entity, limit: int = 100, scope: GraphScope | None = None
) -> list[Relation]:
    """The relations of one entity valid now, strongest first (for the entity detail)."""
    now = timezone.now()
    return list(
        relation_queryset(project=project, scope=scope)
        .filter(Q(source=entity) | Q(target=entity))
        .filter(valid_from__lte=now)
        .filter(Q(valid_to__isnull=True) | Q(valid_to__gt=now))
        .order_by("-strength", "id")[:limit]
    )
