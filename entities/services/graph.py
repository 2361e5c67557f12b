"""Whole-graph writes: bulk create by name, and the project reset's share of the work."""

from __future__ import annotations

from dataclasses import replace

from django.db import transaction

from entities.models import Entity, EntityMemory, Relation, Tag
from entities.scope import SHARED, GraphScope
from entities.services.entities import EntitySpec, entities_resolve
from entities.services.relations import (
    NamedRelation,
    RelationResult,
    relations_create_by_name,
)
from platformcore.lib.errors import InvalidInput, check_count
from tenants.models import Project


@transaction.atomic
def graph_bulk_create(
    *,
    project: Project,
    entities: list[EntitySpec],
    relations: list[NamedRelation],
    scope: GraphScope = SHARED,
) -> tuple[list[Entity], list[RelationResult]]:
    """Entities and relations in one transaction (MCP `create_entities` + `create_relations`)
    in `scope`'s graph (the project-wide one by default). Entities are deduplicated by name
    and alias; relations name their entities, and a name matching no entity creates one
    typed `unknown`."""
    check_count("entities", entities)
    check_count("relations", relations)
    for index, spec in enumerate(entities):
        try:
            entities[index] = replace(spec, scope=scope).cleaned(project=project)
        except InvalidInput as exc:
            fields = {f"entities.{index}.{key}": value for key, value in exc.fields.items()}
            raise InvalidInput(exc.message, fields=fields) from exc
    created = entities_resolve(project=project, specs=entities) if entities else []
    return created, relations_create_by_name(project=project, items=relations, scope=scope)


@transaction.atomic
def graph_reset(*, project: Project) -> dict[str, int]:
    """Delete the project's whole graph (used by the project reset)."""
    return {
        "entity_memories": EntityMemory.objects.filter(project=project).delete()[0],
        "relations": Relation.objects.filter(project=project).delete()[0],
        "entities": Entity.objects.filter(project=project).delete()[0],
        "tags": Tag.objects.filter(project=project).delete()[0],
    }
