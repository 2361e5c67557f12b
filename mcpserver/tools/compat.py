"""Adapters that give other memory servers' tools (names and arguments) to their users.

Each adapter only renames arguments and calls the standard tool, which calls the service:
sqlnative = the SQL-native entity memory server, memento = Memento MCP (camelCase
arguments), aimemory = the graph and decay plan.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, Literal, cast

from django.conf import settings
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from mcpserver.auth import actor_for
from mcpserver.schemas import DeleteOut, StoreResult
from mcpserver.tools import call, graph, lifecycle, memory, search, session_id_of
from mcpserver.tools.graph import Depth, RelationIn, RelationRef, TypedEntityIn
from mcpserver.tools.memory import DEFAULT_AGENT_ID, LinkType, MemoryType, Unit
from memories.models import MemoryLayer
from memories.selectors.filters import MemoryFilters
from memories.selectors.memories import memory_get as get_selector
from memories.selectors.search_types import SearchQuery
from memories.services.keywords import extract_keywords
from memories.services.links import memory_create_linked
from memories.services.memories import MemoryInput, memories_delete
from memories.services.memories import memory_update as memory_update_service
from memories.services.supersede import memory_revise
from tenants.models import ApiKey
from tenants.namespaces import MAINTENANCE_AGENTS

# --- the SQL-native entity memory server --------------------------------------------------------


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
    keeps only the memories linked to that entity, in the chosen search_mode. min_confidence
    applies to the effective confidence (decayed since the last access: halved every 30
    days unread), as the SQL-native server defines it."""
    filters = MemoryFilters(
        memory_types=list(memory_types or []),
        tags=tags or [],
        entities=[entity_name] if entity_name else [],
        min_confidence=min_confidence,
    )
    return await search.run_search(
        SearchQuery(
            text=query,
            mode=search_mode,
            filters=filters,
            limit=limit,
            token_budget=settings.MEMORY_MCP_MAX_RESULT_TOKENS,
        )
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


async def create_entities(entities: list[TypedEntityIn]) -> dict[str, Any]:
    """Create named entities, deduplicated by (name, entity_type); entity_type is required
    (a built-in type or the project's own)."""
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


async def consolidate_memories(
    similarity_threshold: Annotated[float, Field(gt=0.0, le=1.0)] = 0.85,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Merge clusters of similar memories (similarity >= similarity_threshold) into their most
    confident member; dry_run previews. Only merges: decay and pruning keep their own
    schedules. Returns clusters found, memories merged and memories deleted."""
    return await lifecycle.memory_consolidate(
        similarity_threshold=similarity_threshold, dry_run=dry_run, stages=["merge"]
    )


async def get_memory_stats() -> dict[str, Any]:
    """Analytics of the memory store: totals, by type, confidence, oldest and newest."""
    return await memory.memory_stats()


# --- Memento MCP -------------------------------------------------------------------------------

MementoType = Literal["fact", "decision", "error", "preference", "procedure", "relation"]
MementoLink = Literal["related", "caused_by", "resolved_by", "part_of", "contradicts"]
RECALL_LINKS = ["caused_by", "resolved_by", "relates_to"]  # Memento's default neighbours


def _reading_agent(agent: str | None) -> str | None:
    """The agent a read names: Memento's maintenance names ("system", "admin") name none (a
    maintenance key then reads every namespace, another key the shared pool and that name's)."""
    return None if agent in MAINTENANCE_AGENTS else agent


def _link_type(value: str | None) -> LinkType:
    return cast(LinkType, "relates_to" if value in (None, "related") else value)


def memento_tool(tool: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """Memento's result shape: `{success: true, ...}`, and a refused call as
    `{success: false, error}` (what its tool handler returns), not an MCP tool error."""

    @functools.wraps(tool)
    async def wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            body = await tool(*args, **kwargs)
        except ToolError as exc:
            return {"success": False, "error": str(exc)}
        return {"success": True, **dict(body)}

    # The SDK reads the signature (following __wrapped__) for the output schema: the wrapped
    # tool's own return type would strip `success` from a typed result.
    signature = inspect.signature(tool, eval_str=True)
    wrapper.__signature__ = signature.replace(return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**typing.get_type_hints(tool), "return": dict[str, Any]}
    return wrapper


def _topic_and_keywords(topic: str | None, keywords: list[str] | None) -> dict[str, Any] | None:
    """A fragment's topic is `metadata.topic`; its keywords are its tags: stored apart, so a
    topic never matches as a keyword. Keywords also match fragments whose text has them."""
    conditions: list[dict[str, Any]] = []
    if topic:
        conditions.append({"metadata.topic": topic})
    if keywords:
        texts = [{"memory": {"icontains": word}} for word in keywords]
        conditions.append({"OR": [{"tags": {"in": keywords}}, *texts]})
    return {"AND": conditions} if conditions else None


@memento_tool
async def remember(
    content: str,
    topic: str,
    type: MementoType,
    keywords: Annotated[
        list[str] | None, Field(description="Search keywords; the 5 most frequent words if omitted")
    ] = None,
    importance: Annotated[
        float | None, Field(ge=0.0, le=1.0, description="Omitted: the type's default")
    ] = None,
    source: str = "",
    linkedTo: Annotated[list[str] | None, Field(description="Fragment ids to link")] = None,
    scope: Annotated[
        Literal["permanent", "session"],
        Field(description="session: this session's working memory, returned by context"),
    ] = "permanent",
    isAnchor: Annotated[bool, Field(description="Exempt from decay and expiry")] = False,
    agentId: str | None = None,
    sessionId: Annotated[
        str | None, Field(description="With scope session: the session (default: this one)")
    ] = None,
    ctx: Context | None = None,
) -> dict[str, Any]:
    """Persist a typed knowledge fragment under a topic, linked to `linkedTo` in the same
    transaction (a missing target stores nothing). Returns {success, id, created};
    created=false means the same content already existed. scope "session": working memory
    of this session, returned by its context and gone when the session ends."""
    session = scope == "session"
    run_id = (sessionId or session_id_of(ctx)) if session else None
    data = MemoryInput(
        content=content,
        memory_type=type,
        tags=keywords if keywords is not None else extract_keywords(content),
        importance=importance,
        source=source,
        metadata={"topic": topic, "scope": scope},
        pinned=isAnchor,
        agent_id=agentId or DEFAULT_AGENT_ID,
        run_id=run_id,
        layer=MemoryLayer.SHORT_TERM if session else None,
    )
    links = [(target, "relates_to") for target in linkedTo or []]

    def run(key: ApiKey) -> dict[str, Any]:
        result = memory_create_linked(
            project=key.project, data=data, links=links, actor=actor_for(key)
        )
        body = {"id": str(result.memory.pk), "created": result.created}
        return body | ({"sessionId": run_id} if run_id else {})

    return await call("write", run)


@memento_tool
async def recall(
    keywords: Annotated[list[str] | None, Field(description="Any of these keywords")] = None,
    topic: str | None = None,
    type: MementoType | None = None,
    text: Annotated[str | None, Field(description="Natural-language query")] = None,
    tokenBudget: Annotated[int, Field(ge=1)] = 1000,
    includeLinks: bool = True,
    linkRelationType: MementoLink | None = None,
    threshold: Unit | None = None,
    agentId: str | None = None,
    createdAfter: Annotated[datetime | None, Field(description="Created at or after")] = None,
    createdBefore: Annotated[datetime | None, Field(description="Created before")] = None,
    sessionId: Annotated[
        str | None, Field(description="Whose working memory may be recalled (default: this one)")
    ] = None,
    ctx: Context | None = None,
) -> dict[str, Any]:
    """Recall fragments by text (meaning and words), and/or by keywords, topic, type and time,
    in any combination, within a token budget, with their 1-hop linked fragments. Without
    text, the matching fragments come most important first. Other sessions' working memory
    (scope "session") is never recalled."""
    if not (text or keywords or topic or type or createdAfter or createdBefore):
        raise ToolError("invalid: give text, keywords, topic, type or a time range")
    filters = MemoryFilters(
        session_id=sessionId or session_id_of(ctx),
        agent_id=_reading_agent(agentId),
        memory_types=[type] if type else [],
        created_after=createdAfter,
        created_before=createdBefore,
        expression=_topic_and_keywords(topic, keywords),
    )
    link_types = [_link_type(linkRelationType)] if linkRelationType else RECALL_LINKS
    if text:
        query = SearchQuery(
            text=text, filters=filters, min_similarity=threshold, token_budget=tokenBudget
        )
        return await search.run_search(query, include_linked=includeLinks, link_types=link_types)
    return await search.run_filtered(
        filters, token_budget=tokenBudget, include_linked=includeLinks, link_types=link_types
    )


@memento_tool
async def forget(
    id: str | None = None,
    topic: str | None = None,
    force: Annotated[
        bool, Field(description="Also delete anchors and permanent-tier fragments")
    ] = False,
    agentId: str | None = None,
) -> dict[str, Any]:
    """Delete a fragment by id, or the fragments of a topic (only that topic: keywords that
    equal it do not count). Anchors and the permanent tier (preferences, importance >= 0.8)
    need force=true. With neither id nor topic nothing is deleted: too broad."""
    if not id and not topic:
        raise ToolError("invalid: give id or topic (forgetting a whole agent is too broad)")
    filters = (
        MemoryFilters(agent_id=_reading_agent(agentId), expression={"metadata.topic": topic})
        if topic
        else None
    )

    def run(key: ApiKey) -> dict[str, Any]:
        result = memories_delete(
            project=key.project,
            actor=actor_for(key),
            memory_ids=[id] if id else None,
            filters=filters,
            force=force,
            protect_permanent=True,
        )
        return {
            "deleted": len(result.deleted_ids),
            "deletedIds": result.deleted_ids,
            "skippedIds": result.skipped_pinned_ids,
        }

    return await call("write", run)


@memento_tool
async def link(
    fromId: str, toId: str, relationType: MementoLink = "related", agentId: str | None = None
) -> dict[str, Any]:
    """Create a typed directed edge between two fragments."""
    made = await memory.memory_link(from_id=fromId, to_id=toId, link_type=_link_type(relationType))
    return dict(made)


@memento_tool
async def amend(
    id: str,
    content: str | None = None,
    topic: Annotated[str | None, Field(description="Replaces the topic only")] = None,
    keywords: Annotated[list[str] | None, Field(description="Replaces the keywords only")] = None,
    type: MementoType | None = None,
    importance: Unit | None = None,
    isAnchor: bool | None = None,
    supersedes: Annotated[
        bool,
        Field(
            description="Keep the original: the amended fragment becomes a new one that "
            "supersedes it (the original's importance and confidence are halved)"
        ),
    ] = False,
    agentId: str | None = None,
) -> dict[str, Any]:
    """Modify a fragment in place (its previous version is archived in its history), or with
    supersedes=true as a new fragment that supersedes the original. Topic and keywords change
    independently."""
    given = {
        "content": content,
        "tags": keywords,
        "memory_type": type,
        "importance": importance,
        "pinned": isAnchor,
    }
    changes = {name: value for name, value in given.items() if value is not None}

    def run(key: ApiKey) -> dict[str, Any]:
        if topic is not None:
            current = get_selector(project=key.project, memory_id=id)
            changes["metadata"] = {**current.metadata, "topic": topic}
        revise = memory_revise if supersedes else memory_update_service
        fragment = revise(project=key.project, memory_id=id, changes=changes, actor=actor_for(key))
        return {"id": str(fragment.pk), "fragment": memory.memory_out(key.project, fragment)}

    return await call("write", run)


@memento_tool
async def graph_explore(startId: str, agentId: str | None = None) -> dict[str, Any]:
    """Causal chain around a fragment (caused_by / resolved_by), for root-cause analysis."""
    return await graph.memory_causal_chain(
        start_id=startId, depth=1, agent_id=_reading_agent(agentId)
    )
