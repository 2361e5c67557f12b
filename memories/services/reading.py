"""Reads that reinforce: what a caller is given back gets stronger (access count, last access,
confidence). One place for every entry point (REST retrieve and search, the MCP get, search
and recall tools of every profile), so a read is reinforced the same way wherever it came
from. The reinforcement is queued and merged (memories/services/reinforcement.py): it never
slows the read that caused it.
"""

from __future__ import annotations

from uuid import UUID

from memories.models import Memory
from memories.selectors.filters import MemoryFilters
from memories.selectors.memories import memories_by_importance, memory_get
from memories.selectors.search import SearchResult, memory_search
from memories.selectors.search_types import SearchQuery
from memories.services.reinforcement import memories_reinforce_later
from tenants.models import Project


def memory_read(*, project: Project, memory_id: UUID | str) -> Memory:
    """One memory, read by its owner: returned and reinforced."""
    memory = memory_get(project=project, memory_id=memory_id)
    memories_reinforce_later(project=project, memory_ids=[memory.pk])
    return memory


def memories_recall(*, project: Project, query: SearchQuery) -> SearchResult:
    """A search whose results are returned to the caller, and so reinforced."""
    result = memory_search(project=project, query=query)
    memories_reinforce_later(project=project, memory_ids=[hit.memory.pk for hit in result.hits])
    return result


def memories_recall_by_filters(
    *, project: Project, filters: MemoryFilters, token_budget: int
) -> list[Memory]:
    """Recall with no text to rank by: the matching memories most important first, within
    `token_budget` tokens, reinforced."""
    found = memories_by_importance(project=project, filters=filters, token_budget=token_budget)
    memories_reinforce_later(project=project, memory_ids=[memory.pk for memory in found])
    return found
