# Generated from _async/graph.py by clients/python/scripts/unasync.py: do not edit.
# ruff: noqa: UP028
"""The knowledge graph: entities, time-bounded relations, bulk writes, analysis, export."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_platform_client import _http
from memory_platform_client.types import (
    JSON,
    Deleted,
    Direction,
    EntityCreated,
    EntityDetail,
    EntityPage,
    EntityType,
    Memory,
    MemoryPage,
    Relation,
    RelationCreated,
    RelationPage,
)

if TYPE_CHECKING:
    from memory_platform_client._sync.client import Client
    from memory_platform_client.types import Entity


class _Area:
    def __init__(self, client: Client) -> None:
        self._client = client


class Entities(_Area):
    """People, projects, technologies... that memories mention (docs/graph.md)."""

    def list(
        self,
        *,
        q: str | None = None,
        match: str | None = None,
        entity_type: EntityType | Sequence[EntityType] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> EntityPage:
        """One page of entities; `q` searches by name, or by meaning with `match="semantic"`."""
        params = _http.query(q=q, match=match, entity_type=entity_type, limit=limit, offset=offset)
        return self._client._call("entities.list", params=params)

    def iter(
        self,
        *,
        q: str | None = None,
        match: str | None = None,
        entity_type: EntityType | Sequence[EntityType] | None = None,
        page_size: int = _http.MAX_PAGE_SIZE,
    ) -> Iterator[Entity]:
        params = _http.query(q=q, match=match, entity_type=entity_type)
        for entity in self._client._pages("entities.iter", params=params, page_size=page_size):
            yield entity

    def create(
        self,
        name: str,
        *,
        entity_type: EntityType | None = None,
        description: str | None = None,
        aliases: Sequence[str] | None = None,
        metadata: JSON | None = None,
    ) -> EntityCreated:
        """Create an entity; one of the same name and type is returned (`created: False`)."""
        json = _http.body(
            name=name,
            entity_type=entity_type,
            description=description,
            aliases=None if aliases is None else builtins.list(aliases),
            metadata=metadata,
        )
        return self._client._call("entities.create", json=json)

    def get(self, entity_id: int) -> EntityDetail:
        """An entity with its relations."""
        return self._client._call("entities.get", path={"id": entity_id})

    def update(self, entity_id: int, **changes: Any) -> EntityDetail:
        """Change `name`, `entity_type`, `description`, `aliases` or `metadata`."""
        return self._client._call("entities.update", path={"id": entity_id}, json=changes)

    def replace(self, entity_id: int, **fields: Any) -> EntityDetail:
        """PUT: the same changes as `update`."""
        return self._client._call("entities.replace", path={"id": entity_id}, json=fields)

    def delete(self, entity_id: int, *, cascade_memories: bool | None = None) -> Deleted:
        """Delete an entity and its relations (`cascade_memories`: and the memories only it
        links); the counts deleted."""
        params = _http.query(cascade_memories=cascade_memories)
        return self._client._call("entities.delete", path={"id": entity_id}, params=params)

    def graph(
        self,
        entity_id: int,
        *,
        depth: int | None = None,
        direction: Direction | None = None,
        min_strength: float | None = None,
        max_nodes: int | None = None,
        relation_type: str | Sequence[str] | None = None,
        as_of: str | datetime | None = None,
        include_memories: bool | None = None,
        memories_per_node: int | None = None,
    ) -> JSON:
        """The entity's neighbourhood: `{center, nodes, edges}` (`as_of`: as it was then)."""
        params = _http.query(
            depth=depth,
            direction=direction,
            min_strength=min_strength,
            max_nodes=max_nodes,
            relation_type=relation_type,
            as_of=as_of,
            include_memories=include_memories,
            memories_per_node=memories_per_node,
        )
        return self._client._call("entities.graph", path={"id": entity_id}, params=params)

    def memories(self, entity_id: int, *, limit: int | None = None, offset: int = 0) -> MemoryPage:
        """One page of the memories linked to the entity."""
        params = _http.query(limit=limit, offset=offset)
        return self._client._call("entities.memories", path={"id": entity_id}, params=params)

    def iter_memories(
        self, entity_id: int, *, page_size: int = _http.MAX_PAGE_SIZE
    ) -> Iterator[Memory]:
        for memory in self._client._pages(
            "entities.iter_memories", path={"id": entity_id}, params={}, page_size=page_size
        ):
            yield memory


class Relations(_Area):
    """Typed, weighted, time-bounded relations between entities."""

    def list(
        self,
        *,
        entity_id: int | None = None,
        relation_type: str | Sequence[str] | None = None,
        as_of: str | datetime | None = None,
        include_closed: bool | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> RelationPage:
        params = _http.query(
            entity_id=entity_id,
            relation_type=relation_type,
            as_of=as_of,
            include_closed=include_closed,
            limit=limit,
            offset=offset,
        )
        return self._client._call("relations.list", params=params)

    def iter(
        self,
        *,
        entity_id: int | None = None,
        relation_type: str | Sequence[str] | None = None,
        as_of: str | datetime | None = None,
        include_closed: bool | None = None,
        page_size: int = _http.MAX_PAGE_SIZE,
    ) -> Iterator[Relation]:
        params = _http.query(
            entity_id=entity_id,
            relation_type=relation_type,
            as_of=as_of,
            include_closed=include_closed,
        )
        for relation in self._client._pages("relations.iter", params=params, page_size=page_size):
            yield relation

    def create(
        self,
        relation_type: str,
        *,
        source_id: int | None = None,
        target_id: int | None = None,
        source: str | None = None,
        target: str | None = None,
        strength: float | None = None,
        confidence: float | None = None,
        context: str | None = None,
        metadata: JSON | None = None,
        valid_from: str | datetime | None = None,
        valid_to: str | datetime | None = None,
    ) -> RelationCreated:
        """Relate two entities, by id (`source_id`, `target_id`) or by name (`source`,
        `target`; created when new). `closed` lists the relations this one replaced."""
        json = _http.body(
            relation_type=relation_type,
            source_id=source_id,
            target_id=target_id,
            source=source,
            target=target,
            strength=strength,
            confidence=confidence,
            context=context,
            metadata=metadata,
            valid_from=valid_from,
            valid_to=valid_to,
        )
        return self._client._call("relations.create", json=json)

    def get(self, relation_id: int) -> Relation:
        return self._client._call("relations.get", path={"id": relation_id})

    def delete(self, relation_id: int) -> None:
        self._client._call("relations.delete", path={"id": relation_id})

    def close(self, relation_id: int, *, valid_to: str | datetime | None = None) -> Relation:
        """End a relation's validity (now, or at `valid_to`); it stays in the history."""
        json = _http.body(valid_to=valid_to)
        return self._client._call("relations.close", path={"id": relation_id}, json=json)

    def delete_by_name(self, relations: Sequence[Mapping[str, str]]) -> Deleted:
        """Delete relations given as `{"source", "target", "relation_type"}` names."""
        json = {"relations": [dict(item) for item in relations]}
        return self._client._call("relations.delete_by_name", json=json)


class Graph(_Area):
    """The graph as a whole."""

    def bulk(
        self,
        *,
        entities: Sequence[Mapping[str, Any]] = (),
        relations: Sequence[Mapping[str, Any]] = (),
    ) -> JSON:
        """Create entities and relations by name in one request."""
        json = {
            "entities": [dict(item) for item in entities],
            "relations": [dict(item) for item in relations],
        }
        return self._client._call("graph.bulk", json=json)

    def analysis(self, *, top: int | None = None) -> JSON:
        """Graph statistics: counts, the most connected entities, components."""
        return self._client._call("graph.analysis", params=_http.query(top=top))

    def export(
        self,
        *,
        as_of: str | datetime | None = None,
        include_closed: bool | None = None,
        node_types: list[str] | None = None,
    ) -> JSON:
        """Every entity and relation as `{nodes, edges}`; with `node_types` (["all"], or
        kinds: entity, memory, episode, document, chunk) the graph across kinds, typed."""
        params = _http.query(as_of=as_of, include_closed=include_closed, node_types=node_types)
        return self._client._call("graph.export", params=params)

    def export_graphml(
        self,
        *,
        as_of: str | datetime | None = None,
        include_closed: bool | None = None,
        node_types: list[str] | None = None,
    ) -> str:
        """The same export as GraphML XML (for Gephi, yEd, networkx)."""
        params = _http.query(as_of=as_of, include_closed=include_closed, node_types=node_types)
        return self._client._call("graph.export_graphml", params=params)

    def subgraph(
        self,
        node: str,
        *,
        depth: int | None = None,
        node_types: list[str] | None = None,
        edge_types: list[str] | None = None,
        direction: str | None = None,
        max_nodes: int | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        as_of: str | datetime | None = None,
    ) -> JSON:
        """The graph across kinds around any node (`"entity:12"`, `"document:<id>"`):
        entities, memories, episodes, documents and chunks, and the typed edges among them."""
        params = _http.query(
            node=node,
            depth=depth,
            node_types=node_types,
            edge_types=edge_types,
            direction=direction,
            max_nodes=max_nodes,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            as_of=as_of,
        )
        return self._client._call("graph.subgraph", params=params)


class Tags(_Area):
    """The project's tag registry: every tag in use, with descriptions and counts."""

    def list(self, *, q: str | None = None, limit: int | None = None, offset: int = 0) -> JSON:
        """One page of tags, most used first; `q` keeps those containing it."""
        params = _http.query(q=q, limit=limit, offset=offset)
        return self._client._call("tags.list", params=params)

    def get(self, name: str) -> JSON:
        """A tag's description and how many memories and entities carry it."""
        return self._client._call("tags.get", path={"name": name})

    def describe(self, name: str, description: str) -> JSON:
        """Register a tag with its description (or change the description)."""
        json = {"description": description}
        return self._client._call("tags.describe", path={"name": name}, json=json)

    def forget(self, name: str) -> None:
        """Drop a tag's description (a tag in use stays listed)."""
        self._client._call("tags.forget", path={"name": name})
