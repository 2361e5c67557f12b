"""Hybrid mode (the default): keyword and semantic candidates fused into one relevance.

Three fusions, chosen per query with `options={"fusion": ...}` or MEMORY_SEARCH_FUSION:

- `calibrated` (the default, search/fusion.py): α × keyword evidence (the IDF-weighted
  share of the query's terms a memory holds, squared, full at 0.6 of them) + (1 − α) ×
  semantic evidence (the cosine similarity above a floor over a fixed span); a list of
  weak matches keeps weak evidence. α 0.7.
- `minmax`: α × min-max-normalised keyword rank + (1 − α) × cosine similarity; a memory
  found by one signal only gets that signal's share. α 0.5, chosen on LoCoMo. The best
  keyword match gets 1.0 whatever it matched, one common word included.
- `rrf`: reciprocal-rank fusion, α/(k + keyword rank) + (1 − α)/(k + semantic rank), scaled
  so rank 1 in both is 1.0; k = MEMORY_SEARCH_RRF_K (60). α 0.5.

α is the `alpha` option, else MEMORY_SEARCH_HYBRID_ALPHA for the configured fusion, else
(a request naming another fusion) that fusion's own (FUSION_ALPHA).

The memories stored just before and after the best hits in their run get a share of their
relevance (search/neighbours.py: an answer often follows the turn that matched the question).
If the embedding provider fails, hybrid degrades to keyword results (parts say so) instead
of failing the request. Registered boosts (see the package docstring) are added last.

The two signals run at once on two connections (platformcore.lib.db_threads): beside the
keyword statement, the query is embedded and its semantic statements run (the content's, then
the summaries': search/summaries.py); the keyword side
then prepares the boosts' part that does not depend on the hits (the entities the query
names and their neighbours, 3-4 short round trips). Embedding makes the semantic side the
longer one; with the boosts on it too it was longer still, and a third thread for them was
slower again on 2 cores (docs/benchmarks.md, "Design decisions"). Inside a transaction they
run one after the other, with the same results.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from memories.selectors.memories import project_share
from memories.selectors.search.dispatch import (
    candidate_count,
    compiled_search_base,
    resolve_boosts,
)
from memories.selectors.search.fusion import fuse as calibrated_fuse
from memories.selectors.search.keyword import KeywordSide, keyword_side, query_lexemes
from memories.selectors.search.neighbours import add_neighbours
from memories.selectors.search.semantic import min_similarity_of, semantic_ranked_for
from memories.selectors.search.summaries import keyword_matches_with_summaries
from memories.selectors.search_types import Ranked, SearchHit, SearchQuery
from platformcore.lib import stages
from platformcore.lib.db_threads import beside
from platformcore.lib.errors import InvalidInput, ProviderError, check_unit_interval
from tenants.models import Project

logger = logging.getLogger(__name__)
FUSIONS = ("calibrated", "minmax", "rrf")
FUSION_ALPHA = {"calibrated": 0.7, "minmax": 0.5, "rrf": 0.5}  # each one's measured best


def hybrid_search(*, project: Project, query: SearchQuery) -> list[SearchHit]:
    fusion, alpha = _fusion_options(query.options)
    base = compiled_search_base(project=project, query=query)
    pool = max(candidate_count(query), int(query.options.get("pool", 0)))
    min_similarity = min_similarity_of(query)

    def semantic_side() -> Ranked | None:
        try:
            return semantic_ranked_for(
                base,
                query.text,
                project_id=project.pk,
                limit=pool,
                min_similarity=min_similarity,
                user_scoped=bool(query.filters.user_id),
            )
        except ProviderError as exc:
            logger.warning("hybrid search without vectors: %s", exc)
            return None

    semantic_soon = beside(stages.carrying(semantic_side))
    keyword = keyword_side(
        base,
        query.text,
        limit=pool,
        match=query.options.get("keyword_match", "any"),
        share=project_share(project=project),
        project_id=project.pk,
    )
    boosts = _prepare_boosts(project, query) if _boosted(query) else []
    with stages.stage("semantic_wait"):  # the semantic side still running on its thread
        semantic = semantic_soon.result()
    with stages.stage("summaries"):
        keyword = keyword_matches_with_summaries(
            project_id=project.pk,
            base=base,
            side=keyword,
            lexemes=query_lexemes(query.text, project_id=project.pk),
            limit=pool,
        )
    with stages.stage("fusion"):
        fused = _fused(fusion, keyword, semantic or [], alpha)
    with stages.stage("neighbours"):
        hits = add_neighbours(base, fused, query)
    if semantic is None:
        for hit in hits:
            hit.parts["semantic_unavailable"] = 1.0
    _apply_boosts(project, query, hits, boosts)
    return hits


def _fusion_options(options: dict[str, Any]) -> tuple[str, float]:
    fusion = options.get("fusion") or settings.MEMORY_SEARCH_FUSION
    if fusion not in FUSIONS:
        raise InvalidInput("unknown fusion", fields={"fusion": [f"one of {', '.join(FUSIONS)}"]})
    alpha = options.get("alpha")
    if alpha is None and fusion != settings.MEMORY_SEARCH_FUSION:
        alpha = FUSION_ALPHA[fusion]  # a request naming another fusion gets that one's own
    alpha = settings.MEMORY_SEARCH_HYBRID_ALPHA if alpha is None else alpha
    return fusion, check_unit_interval("alpha", alpha)


def fuse(keyword: KeywordSide, semantic: Ranked, options: dict[str, Any]) -> list[SearchHit]:
    """Keyword and semantic rankings fused as hybrid search fuses them, by the `fusion` and
    `alpha` options (or their settings): for rankings of anything with a `pk`, so document
    passages (the documents app) are fused exactly as memories are."""
    fusion, alpha = _fusion_options(options)
    return _fused(fusion, keyword, semantic, alpha)


def _fused(fusion: str, keyword: KeywordSide, semantic: Ranked, alpha: float) -> list[SearchHit]:
    match fusion:
        case "calibrated":
            return calibrated_fuse(keyword.ranked, semantic, keyword.coverage, alpha)
        case "minmax":
            return _minmax(keyword.ranked, semantic, alpha)
        case _:
            return _rrf(keyword.ranked, semantic, alpha)


def _minmax(keyword: Ranked, semantic: Ranked, alpha: float) -> list[SearchHit]:
    ranks = [rank for _, rank in keyword]
    low, high = min(ranks, default=0.0), max(ranks, default=0.0)
    hits: dict[Any, SearchHit] = {}
    for memory, rank in keyword:
        norm = (rank - low) / (high - low) if high > low else 1.0
        hits[memory.pk] = SearchHit(
            memory, alpha * norm, {"keyword": norm, "keyword_rank": rank, "semantic": 0.0}
        )
    for memory, similarity in semantic:
        share = (1 - alpha) * max(similarity, 0.0)
        hit = hits.setdefault(memory.pk, SearchHit(memory, 0.0, {"keyword": 0.0}))
        hit.score += share
        hit.parts["semantic"] = similarity
    return list(hits.values())


def _rrf(keyword: Ranked, semantic: Ranked, alpha: float) -> list[SearchHit]:
    k = settings.MEMORY_SEARCH_RRF_K
    best = alpha / (k + 1) + (1 - alpha) / (k + 1)
    hits: dict[Any, SearchHit] = {}
    for position, (memory, rank) in enumerate(keyword, start=1):
        hits[memory.pk] = SearchHit(
            memory,
            alpha / (k + position) / best,
            {"keyword": rank / (keyword[0][1] or 1.0), "keyword_rank": rank, "semantic": 0.0},
        )
    for position, (memory, similarity) in enumerate(semantic, start=1):
        hit = hits.setdefault(memory.pk, SearchHit(memory, 0.0, {"keyword": 0.0}))
        hit.score += (1 - alpha) / (k + position) / best
        hit.parts["semantic"] = similarity
    return list(hits.values())


def _boosted(query: SearchQuery) -> bool:
    return bool(query.options.get("boosts", True))


def _prepare_boosts(project: Project, query: SearchQuery) -> list[tuple[Any, dict[str, Any]]]:
    """Each boost with the keyword arguments of its call; a boost with a `prepare` callable
    gets what it returned (computed now, before the hits are known) as `prepared`."""
    boosts = []
    for boost in resolve_boosts():
        prepare = getattr(boost, "prepare", None)
        with stages.stage(f"{_boost_name(boost)}_prepare"):
            extra = {"prepared": prepare(project=project, query=query)} if prepare else {}
        boosts.append((boost, extra))
    return boosts


def _apply_boosts(
    project: Project,
    query: SearchQuery,
    hits: list[SearchHit],
    boosts: list[tuple[Any, dict[str, Any]]],
) -> None:
    by_id = {hit.memory.pk: hit for hit in hits}
    for boost, extra in boosts:
        name = _boost_name(boost)
        with stages.stage(name):
            amounts = boost(project=project, query=query, hits=hits, **extra)
        for memory_id, amount in amounts.items():
            if memory_id in by_id:
                by_id[memory_id].score += amount
                by_id[memory_id].parts[name] = amount


def _boost_name(boost: Any) -> str:
    return getattr(boost, "boost_name", boost.__name__)
