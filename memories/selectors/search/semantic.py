"""Semantic mode: pgvector HNSW cosine search over the project's filtered memories.

Filters run in the same SQL as the index scan; pgvector's iterative index scans
(`hnsw.iterative_scan = relaxed_order`) keep scanning until `limit` rows pass the filters,
and small or very selective projects get PostgreSQL's exact plan (filter, then sort by
distance). `hnsw.ef_search` comes from MEMORY_HNSW_EF_SEARCH; both are session settings
sent with every database connection (settings.DATABASES), so a search is one statement.
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from pgvector.django import CosineDistance

from memories.embeddings import Embedder, get_embedder
from memories.models import Memory
from memories.selectors.search.dispatch import (
    CANDIDATE_FIELDS,
    candidate_count,
    search_queryset,
)
from memories.selectors.search_types import SearchHit, SearchQuery
from tenants.models import Project

QUERY_CACHE_SIZE = 1024  # query embeddings kept per process (about 1.6 MB at 384 dims)


def query_vector(text: str) -> list[float]:
    """The query's embedding; ProviderError (502) when the provider fails. Recent queries
    are remembered per process (agents repeat their searches; failures are not cached)."""
    return list(_cached_vector(get_embedder(), text))


@functools.lru_cache(maxsize=QUERY_CACHE_SIZE)
def _cached_vector(embedder: Embedder, text: str) -> tuple[float, ...]:
    return tuple(embedder.embed(text))  # keyed by the provider instance: a new one starts empty


def min_similarity_of(query: SearchQuery) -> float:
    if query.min_similarity is not None:
        return query.min_similarity
    return settings.MEMORY_SEARCH_MIN_SIMILARITY


def semantic_ranked(
    queryset: QuerySet[Memory], vector: list[float], *, limit: int, min_similarity: float
) -> list[tuple[Memory, float]]:
    """(memory, cosine similarity) for the `limit` nearest, most similar first."""
    nearest = (
        queryset.filter(embedding__isnull=False)
        .only(*CANDIDATE_FIELDS)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")[:limit]
    )
    if limit <= settings.MEMORY_HNSW_EF_SEARCH:  # the session's settings (see DATABASES)
        rows = list(nearest)
    else:  # the index returns at most ef_search rows per scan step: widen it for this query
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(limit)])
            rows = list(nearest)
    # The floor is applied to the top `limit`, not inside the index scan: a WHERE on the
    # distance would make an iterative scan walk the whole graph looking for more rows.
    # 0 switches the floor off (cosine similarity can be negative).
    ranked = [(row, 1.0 - float(row.distance)) for row in rows]
    kept = [pair for pair in ranked if min_similarity <= 0 or pair[1] >= min_similarity]
    return sorted(kept, key=lambda pair: -pair[1])


def semantic_search(*, project: Project, query: SearchQuery) -> list[SearchHit]:
    ranked = semantic_ranked(
        search_queryset(project=project, query=query),
        query_vector(query.text),
        limit=candidate_count(query),
        min_similarity=min_similarity_of(query),
    )
    return [
        SearchHit(memory=memory, score=max(similarity, 0.0), parts={"semantic": similarity})
        for memory, similarity in ranked
    ]
