"""Observations: the official MCP memory server's model ("entities with observations,
relations") on ours, for its compatible MCP tools and any other caller.

An observation is a memory linked to its entity: it is embedded, searchable, decays and has
history like any other memory. Reads are paged and token-budgeted so `read_graph` on a big
project returns a page and a `next_offset`, never the whole store.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.db.models import Q

from entities.models import Entity, EntityMemory, EntityType, Relation
from entities.selectors.entities import entity_find_by_name, entity_list
from entities.services.entities import EntitySpec, check_entity_type
from entities.services.graph import graph_bulk_create
from entities.services.memory_graph import memory_entities_link
from entities.services.relations import NamedRelation, RelationSpec, relations_create_by_name
from memories.models import Memory
from memories.services.bulk import memories_create_bulk
from memories.services.memories import MemoryInput, memories_delete
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput, NotFound
from platformcore.lib.tokens import count_tokens
from tenants.models import Project

OBSERVATION_AGENT = "default"
MAX_OBSERVATIONS_PER_ENTITY = 50


def _entity_type(value: str) -> str:
    """The client's type folded to an identifier (types are open), else `unknown`; the type
    as given is kept in metadata (`kg_type`) and shown back."""
    try:
        return check_entity_type(value or EntityType.UNKNOWN)
    except InvalidInput:
        return EntityType.UNKNOWN


def _observe(project: Project, entity: Entity, contents: list[str], actor: Actor) -> list[str]:
    """Observations as memories linked to `entity`. Nothing is extracted from their text: in
    this model the graph holds only the entities and relations its client made."""
    items = [
        MemoryInput(content=text, agent_id=OBSERVATION_AGENT, extract_entities=False)
        for text in contents
    ]
    results = memories_create_bulk(project=project, items=items, actor=actor)
    for result in results:  # link even when the observation already existed
        memory_entities_link(
            project=project, memory=result.memory, entities=[entity], relevance=1.0
        )
    return [result.memory.content for result in results if result.created]


@transaction.atomic
def kg_create_entities(
    *, project: Project, items: list[dict[str, Any]], actor: Actor
) -> list[dict[str, Any]]:
    """Create entities (deduplicated) and store their observations as linked memories."""
    specs = [
        EntitySpec(
            name=item["name"],
            entity_type=_entity_type(item.get("entityType", "")),
            metadata={"kg_type": item.get("entityType", "")},
        )
        for item in items
    ]
    entities, _ = graph_bulk_create(project=project, entities=specs, relations=[])
    for entity, item in zip(entities, items, strict=True):
        _observe(project, entity, list(item.get("observations") or []), actor)
    return kg_nodes(project=project, entities=entities)


def _entity(project: Project, name: str) -> Entity:
    entity = entity_find_by_name(project=project, name=name)
    if entity is None:
        raise NotFound(f"no entity named {name!r}", fields={"entityName": [name]})
    return entity


@transaction.atomic
def kg_add_observations(
    *, project: Project, items: list[dict[str, Any]], actor: Actor
) -> list[dict[str, Any]]:
    out = []
    for item in items:
        entity = _entity(project, item["entityName"])
        added = _observe(project, entity, list(item.get("contents") or []), actor)
        out.append({"entityName": entity.name, "addedObservations": added})
    return out


@transaction.atomic
def kg_delete_observations(*, project: Project, items: list[dict[str, Any]], actor: Actor) -> int:
    deleted = 0
    for item in items:
        entity = _entity(project, item["entityName"])
        ids = list(
            Memory.objects.for_project(project)
            .alive()
            .filter(entity_links__entity=entity, content__in=item.get("observations") or [])
            .values_list("pk", flat=True)
        )
        if ids:
            result = memories_delete(project=project, actor=actor, memory_ids=ids, force=True)
            deleted += len(result.deleted_ids)
    return deleted


def _observations(project: Project, entities: list[Entity]) -> dict[int, list[str]]:
    rows = (
        EntityMemory.objects.filter(project=project, entity__in=entities)
        .filter(memory__deleted_at__isnull=True)
        .order_by("entity_id", "memory__created_at")
        .values_list("entity_id", "memory__content")
    )
    out: dict[int, list[str]] = {entity.pk: [] for entity in entities}
    for entity_id, content in rows:
        if len(out[entity_id]) < MAX_OBSERVATIONS_PER_ENTITY:
            out[entity_id].append(content)
    return out


def kg_nodes(*, project: Project, entities: list[Entity]) -> list[dict[str, Any]]:
    observations = _observations(project, entities)
    return [
        {
            "name": entity.name,
            "entityType": entity.metadata.get("kg_type") or entity.entity_type,
            "observations": observations[entity.pk],
        }
        for entity in entities
    ]


@transaction.atomic
def kg_create_relations(*, project: Project, items: list[dict[str, str]]) -> list[dict[str, str]]:
    """Relations between existing entities (a missing one is an error, nothing is created);
    the ones given are returned, as the official server returns them."""
    named = []
    for item in items:
        for end in ("from", "to"):
            _entity(project, item[end])
        named.append(
            NamedRelation(
                source=item["from"],
                target=item["to"],
                spec=RelationSpec(relation_type=item["relationType"]),
            )
        )
    relations_create_by_name(project=project, items=named)
    return [{k: item[k] for k in ("from", "to", "relationType")} for item in items]


def kg_relations(*, project: Project, entities: list[Entity]) -> list[dict[str, str]]:
    """Open relations touching `entities` (the official server returns those among them)."""
    ids = [entity.pk for entity in entities]
    relations = (
        Relation.objects.for_project(project)
        .open()
        .filter(Q(source_id__in=ids) | Q(target_id__in=ids))
        .select_related("source", "target")
        .order_by("id")
    )
    return [
        {"from": r.source.name, "to": r.target.name, "relationType": r.relation_type}
        for r in relations
    ]


def kg_graph_page(
    *, project: Project, entities: list[Entity], token_budget: int, offset: int, total: int
) -> dict[str, Any]:
    """Entities (with observations) and their relations, cut at `token_budget`."""
    nodes = kg_nodes(project=project, entities=entities)
    kept: list[dict[str, Any]] = []
    used = 0
    for node in nodes:
        cost = count_tokens(json.dumps(node))
        if kept and used + cost > token_budget:
            break
        kept.append(node)
        used += cost
    entities = entities[: len(kept)]
    next_offset = offset + len(kept)
    return {
        "entities": kept,
        "relations": kg_relations(project=project, entities=entities),
        "total_entities": total,
        "next_offset": next_offset if next_offset < total else None,
    }


def kg_read_graph(
    *, project: Project, offset: int, limit: int, token_budget: int
) -> dict[str, Any]:
    page = entity_list(project=project, limit=limit, offset=offset)
    return kg_graph_page(
        project=project,
        entities=page.results,
        token_budget=token_budget,
        offset=offset,
        total=page.count,
    )


def kg_search_nodes(
    *, project: Project, query: str, limit: int, token_budget: int
) -> dict[str, Any]:
    """Entities whose name, type (as the client gave it) or observations contain `query`."""
    names = entity_list(project=project, query=query, limit=limit).results
    by_observation = Entity.objects.for_project(project).filter(
        Q(metadata__kg_type__icontains=query)
        | Q(entity_type__iexact=query, metadata__kg_type__isnull=True)
        | Q(memory_links__memory__content__icontains=query, memory_links__memory__deleted_at=None)
    )
    found = {entity.pk: entity for entity in names}
    for entity in by_observation.distinct()[:limit]:
        found.setdefault(entity.pk, entity)
    entities = list(found.values())[:limit]
    return kg_graph_page(
        project=project, entities=entities, token_budget=token_budget, offset=0, total=len(entities)
    )


def kg_open_nodes(*, project: Project, names: list[str], token_budget: int) -> dict[str, Any]:
    entities = [e for name in names if (e := entity_find_by_name(project=project, name=name))]
    return kg_graph_page(
        project=project, entities=entities, token_budget=token_budget, offset=0, total=len(entities)
    )
