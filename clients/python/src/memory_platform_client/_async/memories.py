"""Memories and the typed links between them."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack

from memory_platform_client import _http
from memory_platform_client.types import (
    JSON,
    AddResult,
    BulkCreated,
    Deleted,
    Entity,
    Fusion,
    History,
    Link,
    LinkType,
    Memory,
    MemoryChanges,
    MemoryCreated,
    MemoryFields,
    MemoryFilters,
    MemoryPage,
    ScoredMemory,
    SearchMode,
    SearchResponse,
    TraversalOptions,
)

if TYPE_CHECKING:
    from memory_platform_client._async.client import AsyncClient


class _Area:
    def __init__(self, client: AsyncClient) -> None:
        self._client = client


class AsyncMemories(_Area):
    """Store, read, change, delete and search memories."""

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        include_deleted: bool | None = None,
        **filters: Unpack[MemoryFilters],
    ) -> MemoryPage:
        """One page of memories, newest first (`limit` at most 100). `include_deleted` needs
        an admin key."""
        params = _http.query(limit=limit, offset=offset, include_deleted=include_deleted, **filters)
        return await self._client._call("memories.list", params=params)

    async def iter(
        self,
        *,
        page_size: int = _http.MAX_PAGE_SIZE,
        include_deleted: bool | None = None,
        **filters: Unpack[MemoryFilters],
    ) -> AsyncIterator[Memory]:
        """Every memory matching the filters, fetched a page at a time."""
        params = _http.query(include_deleted=include_deleted, **filters)
        async for memory in self._client._pages(
            "memories.iter", params=params, page_size=page_size
        ):
            yield memory

    async def create(self, content: str, **fields: Unpack[MemoryFields]) -> MemoryCreated:
        """Store one memory (at least one of user_id / agent_id / run_id). An exact duplicate
        in the same scope returns the existing memory with `created: False`."""
        return await self._client._call(
            "memories.create", json=_http.body(content=content, **fields)
        )

    async def create_many(
        self,
        memories: Sequence[Mapping[str, Any]],
        *,
        near_duplicates: Literal["inline", "consolidation"] | None = None,
        vector_index: Literal["inline", "deferred"] | None = None,
    ) -> BulkCreated:
        """Store up to 1,000 memories in one transaction (each a `create` body); all or
        nothing on invalid input, errors name `memories.<i>.<field>`."""
        json = _http.body(
            memories=[_http.body(**item) for item in memories],
            near_duplicates=near_duplicates,
            vector_index=vector_index,
        )
        return await self._client._call("memories.create_many", json=json)

    async def get(self, memory_id: str) -> Memory:
        """One memory (reading it reinforces it)."""
        return await self._client._call("memories.get", path={"id": memory_id})

    async def update(self, memory_id: str, **changes: Unpack[MemoryChanges]) -> Memory:
        """Change some fields; the memory as it is now."""
        json = {name: _http.jsonable(value) for name, value in changes.items()}
        return await self._client._call("memories.update", path={"id": memory_id}, json=json)

    async def replace(self, memory_id: str, **fields: Unpack[MemoryChanges]) -> Memory:
        """PUT: the same changes as `update` (fields not given keep their values)."""
        json = {name: _http.jsonable(value) for name, value in fields.items()}
        return await self._client._call("memories.replace", path={"id": memory_id}, json=json)

    async def delete(self, memory_id: str) -> None:
        """Soft delete (undo with `restore`)."""
        await self._client._call("memories.delete", path={"id": memory_id})

    async def delete_scope(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> Deleted:
        """Delete every memory of one scope; the platform refuses an empty scope (400)."""
        params = _http.query(user_id=user_id, agent_id=agent_id, run_id=run_id)
        return await self._client._call("memories.delete_scope", params=params)

    async def history(self, memory_id: str) -> builtins.list[History]:
        """The memory's audit trail, oldest first (ADD, UPDATE, DELETE, MERGE, RESTORE)."""
        return await self._client._call("memories.history", path={"id": memory_id})

    async def restore(self, memory_id: str) -> Memory:
        """Undo a soft delete."""
        return await self._client._call("memories.restore", path={"id": memory_id})

    async def search(
        self,
        query: str,
        *,
        mode: SearchMode | None = None,
        limit: int | None = None,
        offset: int | None = None,
        min_similarity: float | None = None,
        token_budget: int | None = None,
        fusion: Fusion | None = None,
        alpha: float | None = None,
        neighbours: int | None = None,
        neighbour_weight: float | None = None,
        date_weight: float | None = None,
        **filters: Unpack[MemoryFilters],
    ) -> SearchResponse:
        """Search by meaning and keywords (`mode`: hybrid by default, keyword, semantic,
        graph); each result has `score` and `score_parts`. Returned memories are reinforced.
        Hybrid tuning: `fusion`, `alpha`, `neighbours` (memories each side of the best hits in
        their run), `neighbour_weight`, `date_weight` (dates the question names)."""
        json = _http.body(
            query=query,
            mode=mode,
            limit=limit,
            offset=offset,
            min_similarity=min_similarity,
            token_budget=token_budget,
            fusion=fusion,
            alpha=alpha,
            neighbours=neighbours,
            neighbour_weight=neighbour_weight,
            date_weight=date_weight,
            **_http.filter_body(dict(filters)),
        )
        return await self._client._call("memories.search", json=json)

    async def search_get(
        self,
        query: str,
        *,
        mode: SearchMode | None = None,
        limit: int | None = None,
        offset: int | None = None,
        min_similarity: float | None = None,
        token_budget: int | None = None,
        fusion: Fusion | None = None,
        alpha: float | None = None,
        neighbours: int | None = None,
        neighbour_weight: float | None = None,
        date_weight: float | None = None,
        **filters: Unpack[MemoryFilters],
    ) -> SearchResponse:
        """The same search as `search`, sent as `GET /memories/search/?q=...`."""
        params = _http.query(
            q=query,
            mode=mode,
            limit=limit,
            offset=offset,
            min_similarity=min_similarity,
            token_budget=token_budget,
            fusion=fusion,
            alpha=alpha,
            neighbours=neighbours,
            neighbour_weight=neighbour_weight,
            date_weight=date_weight,
            **filters,
        )
        return await self._client._call("memories.search_get", params=params)

    async def iter_search(
        self,
        query: str,
        *,
        mode: SearchMode | None = None,
        page_size: int = _http.MAX_PAGE_SIZE,
        min_similarity: float | None = None,
        fusion: Fusion | None = None,
        alpha: float | None = None,
        neighbours: int | None = None,
        neighbour_weight: float | None = None,
        date_weight: float | None = None,
        **filters: Unpack[MemoryFilters],
    ) -> AsyncIterator[ScoredMemory]:
        """Search results page after page, as deep as the platform pages search (offset
        1,000). Each page is its own search, so ranks may shift slightly between pages."""
        json = _http.body(
            query=query,
            mode=mode,
            min_similarity=min_similarity,
            fusion=fusion,
            alpha=alpha,
            neighbours=neighbours,
            neighbour_weight=neighbour_weight,
            date_weight=date_weight,
            **_http.filter_body(dict(filters)),
        )
        async for hit in self._client._pages(
            "memories.iter_search",
            json=json,
            page_size=page_size,
            max_offset=_http.MAX_SEARCH_OFFSET,
        ):
            yield hit

    async def add(
        self,
        messages: str | Sequence[Mapping[str, str]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: JSON | None = None,
        prompt: str | None = None,
        infer: bool | None = None,
    ) -> AddResult:
        """The add pipeline (mem0's `add`): a text or chat messages (`{"role", "content"}`)
        become facts, each stored, merged into or retiring an existing memory
        (`{"results": [ADD / UPDATE / DELETE / NONE events]}`). `infer=False` stores as-is."""
        json = _http.body(
            messages=messages if isinstance(messages, str) else [dict(m) for m in messages],
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            metadata=metadata,
            prompt=prompt,
            infer=infer,
        )
        return await self._client._call("memories.add", json=json)

    async def traverse(self, memory_id: str, **options: Unpack[TraversalOptions]) -> JSON:
        """The memories reached over links from this one: `{center, nodes, edges}`."""
        params = _http.query(**options)
        return await self._client._call(
            "memories.traverse", path={"memory_pk": memory_id}, params=params
        )

    async def causal_chain(self, memory_id: str, **options: Unpack[TraversalOptions]) -> JSON:
        """Causes and fixes around an error memory: `{center, nodes, edges}`."""
        params = _http.query(**options)
        return await self._client._call(
            "memories.causal_chain", path={"memory_pk": memory_id}, params=params
        )

    async def entities(self, memory_id: str) -> builtins.list[Entity]:
        """The knowledge-graph entities this memory is linked to."""
        return await self._client._call("memories.entities", path={"memory_pk": memory_id})

    async def utility(self, memory_id: str) -> JSON:
        """The memory's utility score, when it was assessed, and the heuristic's parts."""
        return await self._client._call("memories.utility", path={"id": memory_id})

    async def feedback(
        self, memory_id: str, *, helpful: bool, tool_name: str | None = None
    ) -> JSON:
        """Say whether the memory helped (its utility is scored again)."""
        json = _http.body(helpful=helpful, tool_name=tool_name)
        return await self._client._call("memories.feedback", path={"id": memory_id}, json=json)


class AsyncLinks(_Area):
    """Typed links between two memories."""

    async def list(self, memory_id: str) -> builtins.list[Link]:
        return await self._client._call("links.list", path={"memory_pk": memory_id})

    async def create(
        self,
        memory_id: str,
        to_id: str,
        *,
        link_type: LinkType | None = None,
        strength: float | None = None,
        metadata: JSON | None = None,
    ) -> Link:
        """Link `memory_id` to `to_id` (`relates_to` by default); an existing link is returned."""
        json = _http.body(to_id=to_id, link_type=link_type, strength=strength, metadata=metadata)
        return await self._client._call("links.create", path={"memory_pk": memory_id}, json=json)

    async def delete(self, memory_id: str, link_id: str) -> None:
        await self._client._call("links.delete", path={"memory_pk": memory_id, "id": link_id})
