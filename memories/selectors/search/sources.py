"""Search across sources: memories and what the apps above register beside them (the
passages of uploaded documents), ranked together under one limit and token budget.

A source is a callable installed under the `extra_search_sources` hook (MEMORY_HOOKS):
`(*, project, query: SearchQuery, limit: int) -> list[SourceHit]`, its best `limit` hits for
the query's text, mode and scope filters, with a `source_name` attribute (what callers name
in `sources=`) and a `render(*, project, query, hits) -> list[dict]` attribute that turns the
returned page's hits into their JSON (so snippets are made for the page only). The memory
store never imports a source: `documents` registers itself in settings.

Memories are ranked as `memory_search` ranks them (relevance × decay-aware confidence ×
utility); a source's hits carry their own relevance on the same 0-1 scale (the hybrid
fusion of their keyword and semantic ranks). The merged list is paged and cut at the token
budget like a memory search. Paging reaches offset + limit <= MEMORY_MAX_PAGE_SIZE.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings

from memories.selectors.search.dispatch import memory_search, validate_query
from memories.selectors.search_types import SearchHit, SearchQuery, summary_fits
from platformcore.lib.errors import InvalidInput
from platformcore.lib.hooks import hooks
from tenants.models import Project

MEMORIES = "memories"
DOCUMENTS = "documents"  # the name the documents app registers its source under


@dataclass
class SourceHit:
    """A hit of a registered source: `item` is the source's own row, rendered by it."""

    source: str
    key: Any
    score: float
    token_count: int
    item: Any
    parts: dict[str, float] = field(default_factory=dict)
    summary_tokens: int = 0  # a shorter form the source can send under a tight budget
    summarized: bool = False

    @property
    def tokens(self) -> int:
        return self.summary_tokens if self.summarized else self.token_count


@dataclass(frozen=True)
class SourcesResult:
    hits: list[SearchHit | SourceHit]  # memories as SearchHit, every other source's SourceHit
    sources: list[str]
    mode: str
    limit: int
    offset: int
    token_budget: int | None
    tokens: int
    budget_exhausted: bool


def source_names() -> list[str]:
    """What `sources=` may name: memories, then every installed source."""
    return [MEMORIES, *(source.source_name for source in hooks("extra_search_sources"))]


def requested_sources(sources: list[str] | None, include_documents: bool | None) -> list[str]:
    """What a search asked for: `sources` (default memories alone), plus documents with
    `include_documents`."""
    names = list(sources or [MEMORIES])
    if include_documents and DOCUMENTS not in names:
        names.append(DOCUMENTS)
    return names


def check_sources(names: list[str]) -> list[str]:
    """`names` without repeats, each a known source; InvalidInput naming `sources` if not."""
    known = source_names()
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        message = f"a list of {', '.join(known)}"
        raise InvalidInput(f"sources must be {message}", fields={"sources": [message]})
    return list(dict.fromkeys(names))


def search_sources(*, project: Project, query: SearchQuery, sources: list[str]) -> SourcesResult:
    """The best hits of every named source, merged by score, paged, within the budget."""
    sources = check_sources(sources)
    validate_query(query)
    window = query.offset + query.limit
    if window > settings.MEMORY_MAX_PAGE_SIZE:
        message = f"offset + limit at most {settings.MEMORY_MAX_PAGE_SIZE} across sources"
        raise InvalidInput(message, fields={"offset": [message]})
    hits: list[SearchHit | SourceHit] = []
    if MEMORIES in sources:
        first = replace(query, offset=0, limit=window, token_budget=None)
        hits.extend(memory_search(project=project, query=first).hits)
    for source in hooks("extra_search_sources"):
        if source.source_name in sources:
            hits.extend(source(project=project, query=query, limit=window))
    hits.sort(key=lambda hit: -hit.score)
    page, tokens, exhausted = _within_budget(hits[query.offset : window], query.token_budget)
    return SourcesResult(
        hits=page,
        sources=sources,
        mode=query.mode,
        limit=query.limit,
        offset=query.offset,
        token_budget=query.token_budget,
        tokens=tokens,
        budget_exhausted=exhausted,
    )


def token_count(hit: SearchHit | SourceHit) -> int:
    return hit.token_count if isinstance(hit, SourceHit) else hit.memory.token_count


def _shorter_fits(hit: SearchHit | SourceHit, room: int) -> bool:
    if isinstance(hit, SourceHit):
        return 0 < hit.summary_tokens <= room
    return summary_fits(hit.memory, room)


def _within_budget(
    hits: list[SearchHit | SourceHit], budget: int | None
) -> tuple[list[SearchHit | SourceHit], int, bool]:
    """Accumulate in rank order; a hit whose full text would exceed the budget is sent as
    its summary when that fits, else the page stops before it (as memory_search does)."""
    kept: list[SearchHit | SourceHit] = []
    total = 0
    for hit in hits:
        if budget is not None and total + token_count(hit) > budget:
            if not _shorter_fits(hit, budget - total):
                return kept, total, True
            hit.summarized = True
        kept.append(hit)
        total += hit.tokens
    return kept, total, False


def rendered_sources(
    *, project: Project, query: SearchQuery, hits: list[SearchHit | SourceHit]
) -> dict[int, dict[str, Any]]:
    """{position in `hits`: JSON} of the hits of registered sources, each rendered by its
    source in one call."""
    rendered: dict[int, dict[str, Any]] = {}
    for source in hooks("extra_search_sources"):
        positions = [
            i
            for i, hit in enumerate(hits)
            if isinstance(hit, SourceHit) and hit.source == source.source_name
        ]
        if positions:
            bodies = source.render(project=project, query=query, hits=[hits[i] for i in positions])
            rendered.update(zip(positions, bodies, strict=True))
    return rendered
