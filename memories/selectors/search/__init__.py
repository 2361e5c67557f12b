"""Memory search: one dispatcher, pluggable modes.

`memory_search(project=, query=)` validates the query, resolves the mode from `MODES`,
multiplies each hit's relevance by the memory's effective confidence (read-time decay),
re-ranks, pages (`offset`/`limit`) and applies the token budget.

Plugging in a mode: a function `(*, project, query: SearchQuery) -> list[SearchHit]` whose
hits carry `score` = relevance (before decay) and explainable `parts`, returning at least
`candidate_count(query)` hits when that many match (so decay re-ranking and paging have room).
Start from `search_queryset(project=, query=)` so the filters and tenant scoping are the same as
every other mode. An app above registers its mode with `register_mode(name, function)` in its
AppConfig.ready() (the knowledge graph registers `graph`); a mode that cannot be imported is a
400 saying so.

Hybrid boosts: `HYBRID_BOOSTS` lists callables (this app's as import strings)
`(*, project, query: SearchQuery, hits: list[SearchHit]) -> dict[UUID, float]`. Hybrid calls
each after fusion and adds the returned amounts to the named hits' relevance (recorded in
`parts` under the callable's `boost_name` attribute, default its function name). A boost
that cannot be imported is skipped; `options={"boosts": False}` turns them off per query.
A boost may carry a `prepare(*, project, query)` callable for the work that does not need the
hits: hybrid calls it while its semantic statement runs and passes the result as `prepared=`.
The knowledge graph registers its `graph_boost` with `register_boost` in its AppConfig.ready().
"""

from memories.selectors.search.dispatch import (
    HYBRID_BOOSTS,
    MODES,
    SearchResult,
    candidate_count,
    memory_search,
    register_boost,
    register_mode,
    search_queryset,
)

__all__ = [
    "HYBRID_BOOSTS",
    "MODES",
    "SearchResult",
    "candidate_count",
    "memory_search",
    "register_boost",
    "register_mode",
    "search_queryset",
]
