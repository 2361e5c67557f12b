"""The official MCP memory server's tools (`kg` profile), on the platform's graph."""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from pydantic import BaseModel, Field

from entities.services import observations as kg
from mcpserver.auth import actor_for
from mcpserver.tools import call
from mcpserver.tools.graph import RelationRef, entity_delete, relation_delete
from tenants.models import ApiKey


class KgEntity(BaseModel):
    name: str
    entityType: str
    observations: list[str] = Field(default_factory=list)


class KgRelation(BaseModel):
    model_config = {"populate_by_name": True}

    from_: str = Field(alias="from")
    to: str
    relationType: str


class KgObservations(BaseModel):
    entityName: str
    contents: list[str]


class KgDeletion(BaseModel):
    entityName: str
    observations: list[str]


def _budget() -> int:
    return settings.MEMORY_MCP_MAX_RESULT_TOKENS


async def create_entities(entities: list[KgEntity]) -> dict[str, Any]:
    """Create entities with their observations; existing names are reused, not duplicated."""

    def run(key: ApiKey) -> dict[str, Any]:
        items = [entity.model_dump() for entity in entities]
        return {
            "entities": kg.kg_create_entities(
                project=key.project, items=items, actor=actor_for(key)
            )
        }

    return await call("write", run)


async def create_relations(relations: list[KgRelation]) -> dict[str, Any]:
    """Create relations (active voice, e.g. works_at) between existing entities by name;
    returns the relations given. An entity that does not exist is an error."""

    def run(key: ApiKey) -> dict[str, Any]:
        items = [r.model_dump(by_alias=True) for r in relations]
        return {"relations": kg.kg_create_relations(project=key.project, items=items)}

    return await call("write", run)


def _done(message: str) -> dict[str, Any]:
    return {"success": True, "message": message}


async def add_observations(observations: list[KgObservations]) -> dict[str, Any]:
    """Add observations (facts) to existing entities; returns the ones actually added."""

    def run(key: ApiKey) -> dict[str, Any]:
        items = [item.model_dump() for item in observations]
        added = kg.kg_add_observations(project=key.project, items=items, actor=actor_for(key))
        return {"results": added}

    return await call("write", run)


async def delete_observations(deletions: list[KgDeletion]) -> dict[str, Any]:
    """Delete specific observations of entities."""

    def run(key: ApiKey) -> dict[str, Any]:
        items = [item.model_dump() for item in deletions]
        deleted = kg.kg_delete_observations(project=key.project, items=items, actor=actor_for(key))
        return _done(f"Deleted {deleted} observation(s)")

    return await call("write", run)


async def delete_entities(entityNames: list[str]) -> dict[str, Any]:
    """Delete entities and their relations."""
    await entity_delete(entity_names=entityNames)
    return _done(f"Deleted {len(entityNames)} entities")


async def delete_relations(relations: list[KgRelation]) -> dict[str, Any]:
    """Delete relations by (from, to, relationType)."""
    refs = [
        RelationRef(source=r.from_, target=r.to, relation_type=r.relationType) for r in relations
    ]
    await relation_delete(relations=refs)
    return _done(f"Deleted {len(refs)} relation(s)")


async def read_graph(
    offset: Annotated[int, Field(ge=0, description="Continue from next_offset")] = 0,
    limit: Annotated[int, Field(ge=1, le=200)] = 50,
) -> dict[str, Any]:
    """Read the knowledge graph, one page at a time (entities with observations and their
    relations). A large graph is paged by a token budget: follow next_offset."""
    return await call(
        "read",
        lambda key: kg.kg_read_graph(
            project=key.project, offset=offset, limit=limit, token_budget=_budget()
        ),
    )


async def search_nodes(
    query: str, limit: Annotated[int, Field(ge=1, le=100)] = 20
) -> dict[str, Any]:
    """Find entities whose name, type or observations match a query."""
    return await call(
        "read",
        lambda key: kg.kg_search_nodes(
            project=key.project, query=query, limit=limit, token_budget=_budget()
        ),
    )


async def open_nodes(names: list[str]) -> dict[str, Any]:
    """Open entities by name: their observations and relations."""
    return await call(
        "read",
        lambda key: kg.kg_open_nodes(project=key.project, names=names, token_budget=_budget()),
    )
