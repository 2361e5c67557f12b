"""Semantic mode: pgvector HNSW cosine search over the project's filtered memories.

Filters run in the same SQL as the index scan; pgvector's iterative index scans
(`hnsw.iterative_scan = relaxed_order`) keep scanning until `limit` rows pass the filters,
and small or very selective projects get PostgreSQL's exact plan (filter, then sort by
distance). `hnsw.ef_search` comes from MEMORY_HNSW_EF_SEARCH; both are session settings
sent with every database connection (settings.DATABASES), so a search is one statement.
"""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.db import DataError, connection
from django.db.models import FloatField, QuerySet, UUIDField, Value
from django.db.models.expressions import RawSQL

from memories.embeddings import Embedder
from memories.models import Memory
from memories.selectors.filters import effective_confidence
from memories.selectors.pending_vectors import graph_and_pending
from memories.selectors.search.dispatch import (
    SearchBase,
    candidate,
    candidate_columns,
    candidate_count,
    compiled_search_base,
    search_base,
)
from memories.selectors.search.statements import fetch_with_settings
from memories.selectors.search.summaries import with_summaries
from memories.selectors.search_types import Ranked, SearchHit, SearchQuery
from memories.services.embedding_space import store_embedder, switch_announced
from platformcore.lib.stages import stage
from platformcore.lib.vectors import vector_literal
from tenants.models import Project

QUERY_CACHE_SIZE = 1024  # query embeddings kept per process (about 1.6 MB at 384 dims)


def query_vector(text: str, *, project_id: int | None = None) -> list[float]:
    """The query's embedding; ProviderError (502) when the provider fails. Recent queries
    are remembered per process and project (agents repeat their searches; failures are not
    cached): per project, so how fast a search answers never tells one tenant what another
    one searched for."""
    embedder = store_embedder(recheck=switch_announced())  # afresh around a live switch
    return list(_cached_vector(embedder, project_id, text))


@functools.lru_cache(maxsize=QUERY_CACHE_SIZE)
def _cached_vector(embedder: Embedder, project_id: int | None, text: str) -> tuple[float, ...]:
    return tuple(embedder.embed_query(text))  # keyed by the provider: a new one starts empty


def min_similarity_of(query: SearchQuery) -> float:
    if query.min_similarity is not None:
        return query.min_similarity
    return settings.MEMORY_SEARCH_MIN_SIMILARITY


def semantic_ranked(
    queryset: QuerySet[Memory] | SearchBase,
    vector: list[float],
    *,
    limit: int,
    min_similarity: float,
    user_scoped: bool = False,
) -> Ranked:
    """(memory, cosine similarity) for the `limit` nearest, most similar first, each memory
    loaded with the candidate fields (and effective_confidence when the queryset has it).

    The statement is written around the filtered queryset's SQL (PostgreSQL pulls the subquery
    up, so the ORDER BY on the distance is the HNSW index scan with the filters): building it
    with the ORM (`annotate(distance=CosineDistance(...))`) and loading model instances through
    the queryset cost about as much Python as the index scan takes. `user_scoped` (the filters
    name a user_id) ranks on the ids and vectors alone, which the (project, user_id) covering
    index holds, and loads the winners by key afterwards (see `_ranked_statement`)."""
    base = search_base(queryset)
    fields = list(candidate_columns())
    sql, params = _ranked_statement(base, vector_literal(vector), limit, user_scoped)
    planner = {}  # beyond the session's settings (see DATABASES)
    if limit > settings.MEMORY_HNSW_EF_SEARCH:
        # the index returns at most ef_search rows per scan step: widen it for this query
        planner["hnsw.ef_search"] = str(limit)
    if user_scoped and base.plain_filters:
        planner["enable_bitmapscan"] = "off"  # see _ranked_statement
    rows = fetch_with_settings(base.db, sql, params, planner)
    # The floor is applied to the top `limit`, not inside the index scan: a WHERE on the
    # distance would make an iterative scan walk the whole graph looking for more rows.
    # 0 switches the floor off (cosine similarity can be negative).
    ranked = []
    for row in rows:
        similarity = 1.0 - float(row[-1])
        if min_similarity > 0 and similarity < min_similarity:
            continue
        ranked.append((candidate(row, row[len(fields)] if base.confidence else None), similarity))
    return sorted(ranked, key=lambda pair: -pair[1])


def _ranked_statement(
    queryset: QuerySet[Memory] | SearchBase, literal: str, limit: int, user_scoped: bool
) -> tuple[str, list[Any]]:
    """The ranking statement: rows of the candidate columns and the effective confidence,
    followed by the cosine distance.

    Unscoped, one level: the nearest rows come from the HNSW scan with every column.
    Scoped to a user, two: the inner level orders the filtered (id, embedding) pairs by
    distance, which the planner answers from the HNSW index or, for a user's few thousand
    rows, from an index-only scan of the covering (project, user_id) index (no table page
    per memory); the outer level loads the `limit` winners by primary key. Scoped with plain
    filters (`SearchBase.plain_filters`), it runs without bitmap scans: the planner would
    AND the user's entries with those of a condition common across the project (memory_types),
    a bitmap that costs more than reading the user's rows by the (project, user_id) index and
    checking the rest on them (docs/benchmarks.md, "Design decisions"). Tags, metadata and
    entity conditions keep bitmap scans: a rare tag's GIN entries can be the best start.
    Unscoped, the
    second level would only add lookups and planning. Either way the ranking is
    of the rows in the graph and of those whose vector is pending, apart, then together
    (memories.selectors.pending_vectors)."""
    base = search_base(queryset)
    distance = "b.emb <=> %s::vector"
    ranking = (
        f"FROM {base.source('b')} WHERE b.emb IS NOT NULL AND {{pending}}"
        f" ORDER BY {distance} LIMIT %s"
    )
    part_params = [literal, *base.params, literal, limit]
    if not user_scoped:
        columns = ", ".join(f"b.{column}" for column in (*candidate_columns(), "ec"))
        statement = f"SELECT {columns}, {distance} AS distance {ranking}"
        parts = graph_and_pending(statement, "b.pending")
        sql = f"SELECT * FROM ({parts}) AS u ORDER BY u.distance LIMIT %s"
        return sql, [*part_params, *part_params, limit]
    parts = graph_and_pending(f"SELECT b.id AS i, {distance} AS distance {ranking}", "b.pending")
    half_life = settings.MEMORY_DECAY_HALF_LIFE_DAYS
    outer_sql, outer_params = _winner_statement(base.db, base.confidence, half_life)
    names = ", ".join(f"w{i}" for i in range(len(candidate_columns()) + 1))
    sql = (
        f"SELECT {names}, t.distance FROM ("
        f"SELECT * FROM ({parts}) AS u ORDER BY u.distance LIMIT %s) AS t"
        f" CROSS JOIN LATERAL ({outer_sql}) AS w({names})"
        f" ORDER BY t.distance"
    )
    return sql, [*part_params, *part_params, limit, *outer_params]


@functools.cache
def _winner_statement(
    using: str, confidence: bool, half_life: float
) -> tuple[str, tuple[Any, ...]]:
    """The memory `t.i` by primary key, its candidate columns and effective confidence (NULL
    when the search's base has none), compiled once per process and decay half-life."""
    winner = Memory.objects.using(using).filter(pk=RawSQL("t.i", (), output_field=UUIDField()))
    if confidence:
        winner = winner.annotate(ec=effective_confidence())
    else:
        winner = winner.annotate(ec=Value(None, output_field=FloatField()))
    sql, params = winner.order_by().values_list(*candidate_columns(), "ec").query.sql_with_params()
    return sql, tuple(params)


def semantic_ranked_for(
    base: SearchBase,
    text: str,
    *,
    project_id: int,
    limit: int,
    min_similarity: float,
    **options: Any,
) -> Ranked:
    """`semantic_ranked` for a query text, with what the memories' summaries match
    (search/summaries.py), both ranked with the same query vector. When a live switch moved
    the store to a model of another size between embedding the query and ranking, the query
    is embedded again with the store's model (the switch's moment, docs/operations.md)."""

    def ranked(vector: list[float]) -> Ranked:
        with stage("vector"):
            found = semantic_ranked(
                base, vector, limit=limit, min_similarity=min_similarity, **options
            )
            _, merged = with_summaries(
                project_id=project_id,
                base=base,
                keyword=None,
                semantic=found,
                lexemes=[],
                vector=vector,
                limit=limit,
                min_similarity=min_similarity,
            )
        return merged or []

    try:
        with stage("embed"):
            vector = query_vector(text, project_id=project_id)
        return ranked(vector)
    except DataError as exc:
        if "dimensions" not in str(exc) or connection.in_atomic_block:
            raise
    return ranked(list(_cached_vector(store_embedder(recheck=True), project_id, text)))


def semantic_search(*, project: Project, query: SearchQuery) -> list[SearchHit]:
    ranked = semantic_ranked_for(
        compiled_search_base(project=project, query=query),
        query.text,
        project_id=project.pk,
        limit=candidate_count(query),
        min_similarity=min_similarity_of(query),
        user_scoped=bool(query.filters.user_id),
    )
    return [
        SearchHit(memory=memory, score=max(similarity, 0.0), parts={"semantic": similarity})
        for memory, similarity in ranked
    ]
