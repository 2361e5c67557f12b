"""Reranking: the best hybrid hits re-scored by a cross-encoder, after fusion and decay.

With MEMORY_SEARCH_RERANKER set, a hybrid search (unless it asks `rerank: false`) gives its
best MEMORY_SEARCH_RERANK_TOP hits, with their text, to the cross-encoder in small batches.
Within MEMORY_SEARCH_RERANK_BUDGET_MS those hits take the cross-encoder's order: the scores
they had, best first, are given out again in its order, so the hits below them and the
score's scale are unchanged, and `score_parts.rerank` is its score. Past the budget (checked
between batches) the fused order stands: a reranked half of a page would mix two orders.
A reranker that fails leaves the fused order too (logged).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import router

from memories.models import Memory
from memories.rerankers import get_reranker
from memories.selectors.search_types import SearchHit, SearchQuery
from platformcore.lib.errors import ProviderError

logger = logging.getLogger(__name__)
BATCH = 8


def wanted(query: SearchQuery) -> bool:
    asked = query.options.get("rerank")
    return query.mode == "hybrid" and asked is not False and get_reranker() is not None


def reranked(query: SearchQuery, hits: list[SearchHit]) -> list[SearchHit]:
    """`hits` (best first) with the top ones in the cross-encoder's order, or as they were."""
    reranker = get_reranker()
    top = hits[: settings.MEMORY_SEARCH_RERANK_TOP]
    if reranker is None or len(top) < 2:
        return hits
    try:
        reranker.load()  # once per process, not counted in the budget
    except ProviderError as exc:
        logger.warning("reranking skipped: %s", exc)
        return hits
    started = time.perf_counter()
    budget = settings.MEMORY_SEARCH_RERANK_BUDGET_MS / 1000
    texts = _contents([hit.memory.pk for hit in top])
    scores: list[float] = []
    try:
        for at in range(0, len(top), BATCH):
            if time.perf_counter() - started >= budget:
                logger.info("reranking stopped at its budget; the fused order stands")
                return hits
            batch = [texts.get(hit.memory.pk, "") for hit in top[at : at + BATCH]]
            scores.extend(reranker.score(query.text, batch))
    except ProviderError as exc:
        logger.warning("reranking skipped: %s", exc)
        return hits
    if time.perf_counter() - started > budget:
        return hits
    places = sorted((hit.score for hit in top), reverse=True)
    order = sorted(range(len(top)), key=lambda i: -scores[i])
    for place, index in zip(places, order, strict=True):
        top[index].score = place
        top[index].parts = {**top[index].parts, "rerank": scores[index]}
    return [top[index] for index in order] + hits[len(top) :]


def _contents(ids: list[object]) -> dict[object, str]:
    rows = Memory.objects.using(router.db_for_read(Memory)).filter(pk__in=ids)
    return dict(rows.values_list("pk", "content"))
