"""memory_search: every search mode, filters, paging, token budget, linked memories."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import Field

from mcpserver.selectors import linked_neighbours
from mcpserver.tools import call
from mcpserver.tools.memory import MemoryType
from memories.models import MemoryLayer, MemoryState
from memories.representations import (
    MemorySerializer,
    budgeted_bodies,
    search_body,
    sources_body,
)
from memories.selectors.filters import MemoryFilters
from memories.selectors.search import MODES
from memories.selectors.search.sources import MEMORIES, requested_sources
from memories.selectors.search_types import SearchQuery
from memories.services.episodes import parse_episode_id
from memories.services.reading import (
    memories_recall,
    memories_recall_across_sources,
    memories_recall_by_filters,
)
from tenants.models import ApiKey, Project

SearchMode = Literal[tuple(MODES)]  # type: ignore[valid-type]
# the states of a live memory (expired ones were pruned)
Layer = Literal[tuple(MemoryLayer.values)]  # type: ignore[valid-type]
LifecycleState = Literal[tuple(s for s in MemoryState.values if s != MemoryState.EXPIRED)]  # type: ignore[valid-type]


async def memory_search(
    query: Annotated[str, Field(min_length=1, description="What to look for, in plain words")],
    mode: Annotated[
        SearchMode,
        Field(description="hybrid (default): keywords + meaning; graph: via entities"),
    ] = "hybrid",
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    memory_types: list[MemoryType] | None = None,
    tags: Annotated[list[str] | None, Field(description="All must match")] = None,
    entities: Annotated[
        list[str] | None,
        Field(description="Memories linked to all these entities (names or aliases)"),
    ] = None,
    entity_ids: Annotated[
        list[int] | None, Field(description="Memories linked to all these entity ids")
    ] = None,
    min_confidence: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
    state: Annotated[
        list[LifecycleState] | None,
        Field(description="Only these lifecycle states; default: all (decay ranks, never hides)"),
    ] = None,
    min_similarity: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    offset: Annotated[int, Field(ge=0, le=1000)] = 0,
    token_budget: Annotated[
        int | None, Field(ge=1, description="Stop adding results past this many tokens")
    ] = None,
    include_linked: Annotated[
        bool, Field(description="Also return memories one link away from the results")
    ] = False,
    link_types: list[str] | None = None,
    include_documents: Annotated[
        bool, Field(description="Also search passages of stored documents (document_add)")
    ] = False,
    sources: Annotated[
        list[str] | None,
        Field(description='What to search: ["memories"] (default), ["memories", "documents"]'),
    ] = None,
    layer: Annotated[
        list[Layer] | None,
        Field(description="Only these layers (short_term, long_term, episodic, semantic...)"),
    ] = None,
    episode_id: Annotated[str | None, Field(description="Stored during this episode")] = None,
    session_id: Annotated[
        str | None,
        Field(
            description="The caller's session: its recent short-term memories rank a little "
            "higher, other sessions' working memory is left out"
        ),
    ] = None,
) -> dict[str, Any]:
    """Recall memories relevant to a query, best first (relevance × decay-aware confidence).
    Filter by scope, types, tags, entities and confidence; page with offset; cap the size with
    token_budget. Each result carries its score and the score parts that explain it. With
    include_documents, passages of documents are ranked among them (`kind` "document", with
    document id and title, page, position and a highlighted snippet)."""
    search = SearchQuery(
        text=query,
        mode=mode,
        filters=MemoryFilters(
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            memory_types=list(memory_types or []),
            tags=tags or [],
            entities=entities or [],
            entity_ids=entity_ids or [],
            min_confidence=min_confidence,
            states=list(state or []),
            layers=list(layer or []),
            episode_id=parse_episode_id(episode_id) if episode_id else None,
            session_id=session_id,
        ),
        limit=limit,
        offset=offset,
        min_similarity=min_similarity,
        token_budget=token_budget or settings.MEMORY_MCP_MAX_RESULT_TOKENS,
        options={"session_id": session_id} if session_id else {},
    )
    wanted = requested_sources(sources, include_documents)
    if wanted != [MEMORIES]:
        return await search_sources_tool(search, wanted)
    return await run_search(search, include_linked=include_linked, link_types=link_types)


async def search_sources_tool(search: SearchQuery, sources: list[str]) -> dict[str, Any]:
    """`search` across `sources` (memories, documents) for the caller's project, ranked
    together; the memories returned are reinforced."""

    def run(key: ApiKey) -> dict[str, Any]:
        result = memories_recall_across_sources(project=key.project, query=search, sources=sources)
        return sources_body(project=key.project, query=search, result=result)

    return await call("read", run, rate="search")


async def run_search(
    search: SearchQuery, *, include_linked: bool = False, link_types: list[str] | None = None
) -> dict[str, Any]:
    """`search` for the caller's project, the results reinforced; with `include_linked`, the
    memories one link away (of `link_types`) as `linked`. Every profile's search tools."""

    def run(key: ApiKey) -> dict[str, Any]:
        result = memories_recall(project=key.project, query=search)
        body = search_body(result)
        hit_ids = [hit.memory.pk for hit in result.hits]
        if include_linked and hit_ids:
            body["linked"] = _linked(key.project, hit_ids, link_types, search.limit)
        return body

    return await call("read", run, rate="search")


async def run_filtered(
    filters: MemoryFilters,
    *,
    token_budget: int,
    include_linked: bool = False,
    link_types: list[str] | None = None,
) -> dict[str, Any]:
    """The memories matching `filters` with no text to rank by: most important first, within
    `token_budget` tokens, reinforced; linked neighbours as `run_search` gives them."""

    def run(key: ApiKey) -> dict[str, Any]:
        found = memories_recall_by_filters(
            project=key.project, filters=filters, token_budget=token_budget
        )
        ids = [memory.pk for memory in found]
        bodies = budgeted_bodies(found)
        body: dict[str, Any] = {
            "results": bodies,
            "count": len(found),
            "tokens": sum(_cost(memory) for memory in found),
            "token_budget": token_budget,
        }
        if include_linked and ids:
            body["linked"] = _linked(key.project, ids, link_types, len(ids))
        return body

    return await call("read", run, rate="search")


def _cost(memory: Any) -> int:
    return memory.summary_tokens if getattr(memory, "summarized", False) else memory.token_count


def _linked(
    project: Project, ids: list[Any], link_types: list[str] | None, limit: int
) -> list[dict[str, Any]]:
    return [
        {
            "link_type": link.link_type,
            "from_id": str(link.from_memory_id),
            "to_id": str(link.to_memory_id),
            "memory": MemorySerializer(memory).data,
        }
        for link, memory in linked_neighbours(
            project=project, memory_ids=ids, link_types=link_types, limit=limit
        )
    ]
