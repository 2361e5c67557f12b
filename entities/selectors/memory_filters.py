"""Memory filters by knowledge-graph entity: memories linked to entities given by id or by
name. The memory store's filters (`entity_ids`, `entities`, the filter language's `entity` and
`entity_id`) reach these through the `entity_filter` hook (platformcore/lib/hooks.py)."""

from __future__ import annotations

from django.db.models import BooleanField, OuterRef, Q, Value

from entities.models import Entity, EntityMemory
from entities.services.entities import normalize_name
from tenants.models import Project


def linked_to_entities(
    *, ids: list[int] | None = None, names: list[str] | None = None, project: Project | None = None
) -> Q:
    """Memories linked to any of the entities with these `ids`, or these `names` (or
    aliases, case-insensitive)."""
    return (
        linked_to_entity_ids(ids or [])
        if names is None
        else linked_to_entity_names(names, project=project)
    )


def linked_to_entity_ids(ids: list[int]) -> Q:
    """Linked to any of these entities: `id IN (SELECT memory_id FROM entity links ...)`,
    with the ids as constants, so PostgreSQL's statistics on the links tell a rare entity
    (exact plan) from a common one (HNSW iterative scan). The link must be in the memory's
    own project: another project's entity id matches nothing."""
    links = EntityMemory.objects.filter(entity_id__in=ids, project_id=OuterRef("project_id"))
    return Q(pk__in=links.values("memory_id"))


def linked_to_entity_names(names: list[str], *, project: Project | None = None) -> Q:
    """Linked to any entity with one of these names or aliases (as `Entity.lookup_keys`).

    Given the project, the names are first resolved to that project's entity ids (one small
    GIN lookup) so the memory filter has constants the planner can estimate; an unknown name
    matches nothing. Without it, one correlated subquery does both (same rows, but a generic
    estimate: a very rare entity can make a filtered HNSW scan stop short)."""
    if project is not None:
        ids = entity_ids_named(project=project, names=names)
        return linked_to_entity_ids(ids) if ids else Q(Value(False, output_field=BooleanField()))
    links = EntityMemory.objects.filter(
        project_id=OuterRef("project_id"),
        entity__project_id=OuterRef("project_id"),
        entity__lookup_keys__overlap=[normalize_name(name) for name in names],
    )
    return Q(pk__in=links.values("memory_id"))


def entity_ids_named(*, project: Project, names: list[str]) -> list[int]:
    """Ids of the project's entities having any of these names or aliases."""
    keys = [normalize_name(name) for name in names]
    matching = Entity.objects.filter(project=project, lookup_keys__overlap=keys)
    return list(matching.order_by("pk").values_list("pk", flat=True))
