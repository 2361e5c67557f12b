"""Reads that reinforce: what a caller is given back gets stronger (access count, last access,
confidence). One place for every entry point (REST retrieve and search, the MCP get, search
and recall tools of every profile), so a read is reinforced the same way wherever it came
from. The reinforcement is queued and merged (memories/services/reinforcement.py): it never
slows the read that caused it.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS

from memories.models import Memory
from memories.selectors.filters import MemoryFilters
from memories.selectors.memories import memories_by_importance, memory_get
from memories.selectors.search import SearchResult, memory_search
from memories.selectors.search.dispatch import in_namespace
from memories.selectors.search.sources import SourcesResult, search_sources
from memories.selectors.search_types import SearchHit, SearchQuery
from memories.services.reinforcement import memories_reinforce_later
from platformcore.db.router import read_alias
from platformcore.lib import result_cache
from platformcore.lib.hooks import run_hooks
from platformcore.lib.stages import stage
from tenants.models import Project


def memory_read(*, project: Project, memory_id: UUID | str) -> Memory:
    """One memory, read by its owner: returned and reinforced."""
    memory = memory_get(project=project, memory_id=memory_id)
    memories_reinforce_later(project=project, memory_ids=[memory.pk])
    return memory


def memories_recall(*, project: Project, query: SearchQuery) -> SearchResult:
    """A search whose results are returned to the caller, and so reinforced; the
    `search_completed` hooks count it (analytics' search statistics)."""
    started = time.perf_counter()
    query = in_namespace(query)  # one agent's answer is never another's from the cache
    result, cached = result_cache.cached(
        project.pk,
        _cache_key(query),
        lambda: memory_search(project=project, query=query),
        store=read_alias() == DEFAULT_DB_ALIAS,
    )
    _answered(project, result, [hit.memory.pk for hit in result.hits], started, cached)
    return result


def memories_recall_by_filters(
    *, project: Project, filters: MemoryFilters, token_budget: int
) -> list[Memory]:
    """Recall with no text to rank by: the matching memories most important first, within
    `token_budget` tokens, reinforced."""
    found = memories_by_importance(project=project, filters=filters, token_budget=token_budget)
    memories_reinforce_later(project=project, memory_ids=[memory.pk for memory in found])
    return found


def memories_recall_across_sources(
    *, project: Project, query: SearchQuery, sources: list[str]
) -> SourcesResult:
    """A search of memories and registered sources (document passages) ranked together:
    the memories returned are reinforced and the search counted, as `memories_recall`."""
    started = time.perf_counter()
    query = in_namespace(query)
    result, cached = result_cache.cached(
        project.pk,
        _cache_key(query, sources),
        lambda: search_sources(project=project, query=query, sources=sources),
        store=read_alias() == DEFAULT_DB_ALIAS,
    )
    returned = [hit.memory.pk for hit in result.hits if isinstance(hit, SearchHit)]
    _answered(project, result, returned, started, cached)
    return result


def _cache_key(query: SearchQuery, sources: list[str] | None = None) -> str:
    """Everything that can change an answer: the text, mode, filters, paging and options."""
    fields = dataclasses.asdict(query)
    return json.dumps([fields, sources], sort_keys=True, default=str)


def _answered(
    project: Project,
    result: SearchResult | SourcesResult,
    returned: list[Any],
    started: float,
    cached: bool,
) -> None:
    """What follows every answered search (from the cache too): its memories reinforced, the
    search counted."""
    with stage("reinforce"):
        latency_ms = (time.perf_counter() - started) * 1000
        memories_reinforce_later(project=project, memory_ids=returned)
        run_hooks(
            "search_completed",
            project=project,
            mode=result.mode,
            hits=len(result.hits),
            latency_ms=latency_ms,
            cached=cached,
        )
