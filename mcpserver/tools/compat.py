"""Adapters that give other memory servers' tools (names and arguments) to their users.

Each adapter only renames arguments and calls the standard tool, which calls the service:
sqlnative = seed 000, memento = seed 002 (camelCase arguments), aimemory = seed 001.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, cast

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from mcpserver.schemas import DeleteOut, LinkResult, MemoryOut, StoreResult
from mcpserver.tools import graph, memory, search
from mcpserver.tools.graph import Depth, EntityIn, RelationIn, RelationRef
from mcpserver.tools.memory import LinkType, MemoryType, Unit

# --- seed 000 (SQL-native entity memory) ----------------------------------------------------


async def store_memory(
    content: str,
    memory_type: MemoryType = "observation",
    tags: list[str] | None = None,
    confidence: Unit = 1.0,
    source: str = "",
    context: str = "",
    metadata: dict[str, Any] | None = None,
    entity_names: list[str] | None = None,
) -> StoreResult:
    """Create a memory with automatic embedding and deduplication; entity_names link it to
    entities (created if new). Returns the memory and whether it was created."""
    return await memory.memory_store(
        content=content,
        memory_type=memory_type,
        tags=tags,
        confidence=confidence,
        source=source,
        context=context,
        metadata=metadata,
        entity_names=entity_names,
    )


async def recall_memories(
    query: Annotated[str, Field(min_length=1)],
    search_mode: search.SearchMode = "hybrid",
    memory_types: list[MemoryType] | None = None,
    tags: list[str] | None = None,
    min_confidence: Unit = 0.1,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    entity_name: Annotated[str | None, Field(description="Memories about this entity")] = None,
) -> dict[str, Any]:
    """Search memories (keyword, semantic, hybrid or graph), sorted by relevance; entity_name
    searches through the knowledge graph from that entity."""
    if entity_name:  # graph mode ranks the memories of the entities the text names
        query, search_mode = f"{entity_name}: {query}", "graph"
    return await search.memory_search(
        query=query,
        mode=search_mode,
        memory_types=memory_types,
        tags=tags,
        min_confidence=min_confidence,
        limit=limit,
    )


async def delete_memories(
    memory_ids: list[str] | None = None,
    before_date: datetime | None = None,
    min_confidence_below: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
    memory_types: list[MemoryType] | None = None,
) -> DeleteOut:
    """Delete memories by id or by filter (before a date, confidence below, types); at least
    one filter is required. Pinned memories are kept."""
    return await memory.memory_delete(
        memory_ids=memory_ids,
        before=before_date,
        confidence_below=min_confidence_below,
        memory_types=memory_types,
    )


async def create_entities(entities: list[EntityIn]) -> dict[str, Any]:
    """Create named entities, deduplicated by (name, entity_type)."""
    return await graph.entity_create(entities=entities)


async def create_relations(relations: list[RelationIn]) -> dict[str, Any]:
    """Create typed relations between entities named by name; unknown names are created."""
    return await graph.relation_create(relations=relations)


async def delete_entities(
    entity_names: list[str], cascade_memories: bool = False
) -> dict[str, Any]:
    """Delete entities (and their relations); their memories too with cascade_memories."""
    return await graph.entity_delete(entity_names=entity_names, cascade_memories=cascade_memories)


async def delete_relations(relations: list[RelationRef]) -> dict[str, Any]:
    """Delete relations given by source, target and relation_type."""
    return await graph.relation_delete(relations=relations)


async def get_entity_graph(
    entity_name: str,
    depth: Depth = 1,
    min_strength: Unit = 0.0,
    include_memories: bool = True,
) -> dict[str, Any]:
    """The subgraph centred on an entity: nodes, edges and each node's memories."""
    return await graph.entity_graph(
        entity_name=entity_name,
        depth=depth,
        min_strength=min_strength,
        include_memories=include_memories,
    )


async def get_memory_stats() -> dict[str, Any]:
    """Analytics of the memory store: totals, by type, confidence, oldest and newest."""
    return await memory.memory_stats()


# --- seed 002 (Memento) ---------------------------------------------------------------------

MementoType = Literal["fact", "decision", "error", "preference", "procedure", "relation"]
MementoLink = Literal["related", "caused_by", "resolved_by", "part_of", "contradicts"]


def _link_type(value: str | None) -> LinkType:
    return cast(LinkType, "relates_to" if value in (None, "related") else value)


async def remember(
    content: str,
    topic: str,
    type: MementoType,
    keywords: list[str] | None = None,
    importance: Unit | None = None,
    source: str = "",
    linkedTo: Annotated[list[str] | None, Field(description="Fragment ids to link")] = None,
    scope: Literal["permanent", "session"] = "permanent",
    isAnchor: Annotated[bool, Field(description="Exempt from decay and expiry")] = False,
    agentId: str | None = None,
) -> dict[str, Any]:
    """Persist a typed knowledge fragment under a topic. Returns {success, id, created};
    created=false means the same content already existed."""
    stored = await memory.memory_store(
        content=content,
        memory_type=type,
        tags=[topic, *(keywords or [])],
        importance=0.5 if importance is None else importance,
        source=source,
        metadata={"topic": topic, "scope": scope},
        pinned=isAnchor,
        agent_id=agentId,
    )
    memory_id = stored["memory"]["id"]
    for target in linkedTo or []:
        await memory.memory_link(from_id=memory_id, to_id=target, link_type="relates_to")
    return {"success": True, "id": memory_id, "created": stored["created"]}


async def recall(
    keywords: list[str] | None = None,
    topic: str | None = None,
    type: MementoType | None = None,
    text: Annotated[str | None, Field(description="Natural-language query")] = None,
    tokenBudget: Annotated[int, Field(ge=1)] = 1000,
    includeLinks: bool = True,
    linkRelationType: MementoLink | None = None,
    threshold: Unit | None = None,
    agentId: str | None = None,
) -> dict[str, Any]:
    """Recall fragments by text (meaning + keywords), keywords, topic or type, within a
    token budget, with 1-hop linked fragments."""
    query = text or " ".join(keywords or []) or topic
    if not query:
        raise ToolError("invalid: give text, keywords or topic")
    links: list[str] | None = [_link_type(linkRelationType)] if linkRelationType else None
    return await search.memory_search(
        query=query,
        mode="hybrid" if text else "keyword",
        agent_id=agentId,
        memory_types=[type] if type else None,
        tags=[topic] if topic else None,
        min_similarity=threshold,
        token_budget=tokenBudget,
        include_linked=includeLinks,
        link_types=links or ["caused_by", "resolved_by", "relates_to"],
    )


async def forget(
    id: str | None = None,
    topic: str | None = None,
    force: Annotated[bool, Field(description="Also delete anchors (pinned)")] = False,
    agentId: str | None = None,
) -> DeleteOut:
    """Delete a fragment by id, or every fragment of a topic. Anchors need force=true."""
    return await memory.memory_delete(
        memory_ids=[id] if id else None,
        tags=[topic] if topic else None,
        agent_id=agentId,
        force=force,
    )


async def link(
    fromId: str, toId: str, relationType: MementoLink = "related", agentId: str | None = None
) -> LinkResult:
    """Create a typed directed edge between two fragments."""
    return await memory.memory_link(from_id=fromId, to_id=toId, link_type=_link_type(relationType))


async def amend(
    id: str,
    content: str | None = None,
    topic: str | None = None,
    keywords: list[str] | None = None,
    type: MementoType | None = None,
    importance: Unit | None = None,
    isAnchor: bool | None = None,
    agentId: str | None = None,
) -> MemoryOut:
    """Modify a fragment in place; its previous version is archived in its history."""
    tags = [topic, *(keywords or [])] if topic else keywords
    return await memory.memory_update(
        memory_id=id,
        content=content,
        memory_type=type,
        tags=[tag for tag in tags if tag] if tags is not None else None,
        importance=importance,
        pinned=isAnchor,
    )


async def graph_explore(startId: str, agentId: str | None = None) -> dict[str, Any]:
    """Causal chain around a fragment (caused_by / resolved_by), for root-cause analysis."""
    return await graph.memory_causal_chain(start_id=startId, depth=1)
