"""Knowledge-graph tools: entities, relations, subgraphs, walks over memory links, and the
tag registry. `user_id` / `agent_id` / `run_id` name whose graph a tool writes or reads
(entities.scope): none is the project-wide graph, which every scope also sees."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from entities.models import EntityType
from entities.representations import (
    EntitySerializer,
    RelationSerializer,
    cross_graph_body,
    memory_graph_body,
    subgraph_body,
    tag_body,
)
from entities.scope import GraphScope
from entities.selectors.analytics import graph_analysis
from entities.selectors.entities import entity_find_by_name
from entities.selectors.graph import Walk, graph_subgraph, parse_node
from entities.selectors.tags import tag_get, tag_list
from entities.selectors.traversal import RelationFilter, entity_subgraph
from entities.services.entities import EntitySpec, entities_delete_by_name
from entities.services.graph import graph_bulk_create
from entities.services.relations import (
    NamedRelation,
    RelationSpec,
    relations_create_by_name,
    relations_delete_by_name,
)
from entities.services.tags import tag_describe as tag_describe_service
from mcpserver.auth import actor_for
from mcpserver.tools import call
from mcpserver.tools.memory import MemoryType
from memories.selectors.link_traversal import memory_causal_chain as causal_chain_selector
from memories.selectors.link_traversal import memory_traverse as traverse_selector
from platformcore.lib.errors import NotFound
from tenants.models import ApiKey, Project

Depth = Annotated[int, Field(ge=0, le=5)]
MaxNodes = Annotated[int, Field(ge=1, le=1000, description="Stop the walk after this many nodes")]
Direction = Literal["out", "in", "both"]
UserId = Annotated[str | None, Field(description="The user whose graph (none: project-wide)")]
AgentId = Annotated[str | None, Field(description="The agent whose graph")]
RunId = Annotated[str | None, Field(description="The run whose graph")]
ENTITY_TYPE_HELP = (
    ", ".join(EntityType.values) + ", or any lower-case identifier (a project's own type)"
)


class EntityIn(BaseModel):
    name: str
    entity_type: str = Field(default="unknown", description=ENTITY_TYPE_HELP)
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)


class TypedEntityIn(EntityIn):
    """An entity whose type the caller must give (the SQL-native server's create_entities)."""

    entity_type: str = Field(description=ENTITY_TYPE_HELP)


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> GraphScope:
    return GraphScope.of({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})


def _read_scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> Any:
    scope = _scope(user_id, agent_id, run_id)
    return None if scope.is_shared else scope


class RelationIn(BaseModel):
    source: str = Field(description="Source entity name (created as unknown if new)")
    target: str = Field(description="Target entity name (created as unknown if new)")
    relation_type: str = Field(description="Active voice, e.g. works_at, depends_on")
    strength: float = Field(default=0.5, ge=0.0, le=1.0)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    context: str = ""


class RelationRef(BaseModel):
    source: str
    target: str
    relation_type: str


def named_relation(item: RelationIn) -> NamedRelation:
    spec = RelationSpec(
        relation_type=item.relation_type,
        strength=item.strength,
        confidence=item.confidence,
        context=item.context,
    )
    return NamedRelation(source=item.source, target=item.target, spec=spec)


async def entity_create(
    entities: list[EntityIn],
    relations: Annotated[list[RelationIn] | None, Field(description="Optional edges")] = None,
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
) -> dict[str, Any]:
    """Create named entities (and optionally relations between them) in one step, in the
    graph of user_id / agent_id / run_id or the project-wide one. The same name and type (or
    alias) in that graph returns the existing entity instead of a duplicate."""

    def run(key: ApiKey) -> dict[str, Any]:
        created, results = graph_bulk_create(
            project=key.project,
            entities=[EntitySpec(**item.model_dump()) for item in entities],
            relations=[named_relation(item) for item in relations or []],
            scope=_scope(user_id, agent_id, run_id),
        )
        return {
            "entities": EntitySerializer(created, many=True).data,
            "relations": RelationSerializer([r.relation for r in results], many=True).data,
        }

    return await call("write", run)


async def relation_create(
    relations: list[RelationIn],
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
) -> dict[str, Any]:
    """Create typed relations between entities named by name (unknown names are created),
    in the graph of user_id / agent_id / run_id or the project-wide one. The same open
    (source, target, type) is updated, not duplicated; a relation that contradicts an open
    one (e.g. a new employer) closes the old one."""

    def run(key: ApiKey) -> dict[str, Any]:
        results = relations_create_by_name(
            project=key.project,
            items=[named_relation(item) for item in relations],
            scope=_scope(user_id, agent_id, run_id),
        )
        return {
            "relations": RelationSerializer([r.relation for r in results], many=True).data,
            "created": sum(result.created for result in results),
            "closed": [relation.pk for result in results for relation in result.closed],
        }

    return await call("write", run)


async def entity_delete(
    entity_names: list[str],
    cascade_memories: Annotated[bool, Field(description="Also delete their memories")] = False,
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
) -> dict[str, Any]:
    """Delete entities by name, with their relations: of every graph, or, given user_id /
    agent_id / run_id, of that scope's own graph. Their memories stay unless
    cascade_memories=true."""

    def run(key: ApiKey) -> dict[str, Any]:
        counts = entities_delete_by_name(
            project=key.project,
            names=entity_names,
            actor=actor_for(key),
            cascade_memories=cascade_memories,
            scope=_read_scope(user_id, agent_id, run_id),
        )
        return {"deleted": counts}

    return await call("write", run)


async def relation_delete(
    relations: list[RelationRef],
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
) -> dict[str, Any]:
    """Delete relations given by (source name, target name, relation_type): of every graph,
    or, given user_id / agent_id / run_id, of that scope's own graph."""

    def run(key: ApiKey) -> dict[str, Any]:
        items = [item.model_dump() for item in relations]
        scope = _read_scope(user_id, agent_id, run_id)
        return {"deleted": relations_delete_by_name(project=key.project, items=items, scope=scope)}

    return await call("write", run)


def entity_by_name(project: Project, name: str, scope: GraphScope | None = None) -> Any:
    entity = entity_find_by_name(project=project, name=name, scope=scope)
    if entity is None:
        raise NotFound(f"no entity named {name!r}", fields={"entity_name": ["not found"]})
    return entity


async def entity_graph(
    entity_name: str,
    depth: Depth = 1,
    min_strength: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0,
    relation_types: list[str] | None = None,
    direction: Direction = "both",
    include_memories: bool = True,
    memories_per_node: Annotated[int, Field(ge=0, le=20)] = 3,
    max_nodes: MaxNodes = 50,
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
) -> dict[str, Any]:
    """The subgraph around an entity: entities within `depth` hops, the relations among them,
    and (optionally) each entity's most relevant memories. Given user_id / agent_id /
    run_id, only that scope's graph and the project-wide one."""

    def run(key: ApiKey) -> dict[str, Any]:
        scope = _read_scope(user_id, agent_id, run_id)
        center = entity_by_name(key.project, entity_name, scope)
        subgraph = entity_subgraph(
            project=key.project,
            entity_id=center.pk,
            depth=depth,
            relations=RelationFilter(
                min_strength=min_strength, relation_types=relation_types or None, scope=scope
            ),
            direction=direction,
            max_nodes=max_nodes,
            include_memories=include_memories,
            memories_per_node=memories_per_node,
        )
        return subgraph_body(subgraph, include_memories=include_memories)

    return await call("read", run)


async def graph_subgraph_tool(
    node: Annotated[
        str, Field(description="The center as <type>:<id>: entity:12, document:<uuid>...")
    ],
    depth: Depth = 1,
    node_types: Annotated[
        list[Literal["entity", "memory", "episode", "document", "chunk"]] | None,
        Field(description="Kinds to walk through and show (default: all)"),
    ] = None,
    edge_types: Annotated[
        list[Literal["relation", "about", "link", "contains", "mentions", "cites"]] | None,
        Field(description="Kinds of edge to follow (default: all)"),
    ] = None,
    direction: Direction = "both",
    max_nodes: MaxNodes = 50,
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
) -> dict[str, Any]:
    """The one knowledge graph around any node: entities, memories, episodes, documents and
    their chunks within `depth` hops, and the typed edges among them (a document mentions
    an entity, a memory cites a chunk, an episode contains memories, a memory is about an
    entity). Nodes are keyed <type>:<id>; use a key as the next `node`."""

    def run(key: ApiKey) -> dict[str, Any]:
        walk = Walk(
            node_types=tuple(node_types or ()),
            edge_types=tuple(edge_types or ()),
            direction=direction,
            scope=_read_scope(user_id, agent_id, run_id),
        )
        graph = graph_subgraph(
            project=key.project,
            node=parse_node(node),
            depth=depth,
            walk=walk,
            max_nodes=max_nodes,
        )
        return cross_graph_body(graph)

    return await call("read", run)


async def memory_traverse(
    memory_id: str,
    depth: Depth = 2,
    link_types: list[str] | None = None,
    direction: Direction = "both",
    min_strength: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0,
    max_nodes: MaxNodes = 100,
    strategy: Annotated[
        Literal["bfs", "dfs"], Field(description="bfs: level by level; dfs: deepest first")
    ] = "bfs",
    time_budget_ms: Annotated[
        int | None,
        Field(ge=1, le=60_000, description="Stop and return what was reached (truncated)"),
    ] = None,
    memory_types: Annotated[
        list[MemoryType] | None, Field(description="Only reach memories of these types")
    ] = None,
    tags: Annotated[list[str] | None, Field(description="Only reach memories with all")] = None,
    include_parent_links: Annotated[
        bool, Field(description="Also follow part_of / contains when link_types is given")
    ] = False,
    user_id: Annotated[str | None, Field(description="Stay inside this user's memories")] = None,
    agent_id: Annotated[str | None, Field(description="Stay inside this agent's")] = None,
    run_id: Annotated[str | None, Field(description="Stay inside this run's")] = None,
) -> dict[str, Any]:
    """Walk typed links between memories from one memory (live memories only): what it
    supports, contradicts, supersedes, was caused by, resolved by... Breadth or depth first,
    within a time budget, filtered by link type, memory type and tags; given user_id /
    agent_id / run_id, it starts and stays inside that scope."""

    def run(key: ApiKey) -> dict[str, Any]:
        graph = traverse_selector(
            project=key.project,
            memory_id=memory_id,
            depth=depth,
            link_types=link_types or None,
            direction=direction,
            min_strength=min_strength,
            max_nodes=max_nodes,
            strategy=strategy,
            time_budget_ms=time_budget_ms,
            memory_types=memory_types or None,
            tags=tags or None,
            include_parent_links=include_parent_links,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )
        return memory_graph_body(graph)

    return await call("read", run)


async def memory_causal_chain(
    start_id: Annotated[str, Field(description="Memory id, typically an error")],
    depth: Depth = 3,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Causes and resolutions around a memory (caused_by / causes / resolved_by links),
    for root-cause analysis starting from an error; inside a scope when one is given."""

    def run(key: ApiKey) -> dict[str, Any]:
        chain = causal_chain_selector(
            project=key.project,
            memory_id=start_id,
            depth=depth,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )
        return memory_graph_body(chain)

    return await call("read", run)


async def memory_graph_analysis(
    top: Annotated[int, Field(ge=1, le=100)] = 10,
    user_id: Annotated[str | None, Field(description="This user's graph and links only")] = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
) -> dict[str, Any]:
    """Graph health at a glance: counts, degrees and the top connectors of the entity graph
    and of the memory-link graph (of one user's, agent's or run's when given)."""
    scope = _read_scope(user_id, agent_id, run_id)
    return await call("read", lambda key: graph_analysis(project=key.project, top=top, scope=scope))


async def tag_list_tool(
    query: Annotated[str, Field(description="Only tags containing this text")] = "",
    limit: Annotated[int, Field(ge=1, le=100)] = 50,
    offset: Annotated[int, Field(ge=0)] = 0,
) -> dict[str, Any]:
    """The project's tag registry: every tag in use on memories and entities and every
    described tag, with its description and counts, most used first."""

    def run(key: ApiKey) -> dict[str, Any]:
        page = tag_list(project=key.project, query=query, limit=limit, offset=offset)
        return {"results": [tag_body(tag) for tag in page.results], "count": page.count}

    return await call("read", run)


async def tag_describe(
    name: str, description: Annotated[str, Field(max_length=2000)]
) -> dict[str, Any]:
    """Register a tag with a description of what it means (or change the description)."""

    def run(key: ApiKey) -> dict[str, Any]:
        tag = tag_describe_service(project=key.project, name=name, description=description)
        return tag_body(tag_get(project=key.project, name=tag.name))

    return await call("write", run)
