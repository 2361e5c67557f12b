"""Search over document chunks, plugged into memory search as the `documents` source
(`extra_search_sources` hook; memories.selectors.search.sources).

The chunks of the caller's project whose document is in the query's scope (user_id,
agent_id, run_id as given, and the created_after/before dates of the document; filters that
only memories have, such as memory types or tags, do not narrow documents) are ranked like
memories: keyword matches (any query term, the GIN index on the chunk's tsvector, ranked by
`ts_rank_cd`), nearest vectors (HNSW, cosine, the same similarity floor), and in hybrid mode
both fused by the memory search's own fusion (`memories.selectors.search.hybrid.fuse`), then
raised by the graph as memories are: a chunk that mentions an entity the question names (or
a neighbour of one) gains a share of its relevance, up to `graph_weight` of it. `graph`
mode finds the chunks that mention the question's entities and their neighbours through the
graph alone. A chunk not embedded
yet is found by its keywords. The page's hits get a highlighted snippet (`ts_headline`) and
the entities that tied them to the question when rendered.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db.models import BooleanField, FloatField, QuerySet
from django.db.models.expressions import RawSQL
from pgvector.django import CosineDistance

from documents.models import ChunkEntity, DocumentChunk
from documents.representations import chunk_hit_body
from entities.models import Entity
from entities.selectors.search import (
    BOOST_WEIGHT,
    DEFAULT_DEPTH,
    entities_in_text,
    entity_scores,
    graph_boost_scores,
    graph_share,
    query_scope,
)
from entities.selectors.traversal import MAX_DEPTH
from memories.models import TEXT_SEARCH_CONFIG
from memories.selectors.search.fusion import idf_coverage, idf_weights
from memories.selectors.search.hybrid import fuse
from memories.selectors.search.keyword import KeywordSide, query_lexemes
from memories.selectors.search.semantic import min_similarity_of, query_vector
from memories.selectors.search.sources import SourceHit
from memories.selectors.search_types import Ranked, SearchHit, SearchQuery
from platformcore.lib.errors import InvalidInput, ProviderError, check_unit_interval
from tenants.models import Project

logger = logging.getLogger(__name__)
SOURCE = "documents"
TABLE = DocumentChunk._meta.db_table
# ts_headline: two fragments of 12-30 words around the matches, matches in **bold**
HEADLINE_OPTIONS = (
    'StartSel=**, StopSel=**, MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=" … "'
)


def chunk_queryset(*, project: Project, query: SearchQuery) -> QuerySet[DocumentChunk]:
    """The project's chunks whose document is in the query's scope."""
    filters = query.filters
    conditions: dict[str, Any] = {
        f"document__{name}": value
        for name in ("user_id", "agent_id", "run_id")
        if (value := getattr(filters, name))
    }
    if filters.created_after:
        conditions["document__created_at__gte"] = filters.created_after
    if filters.created_before:
        conditions["document__created_at__lt"] = filters.created_before
    if query.options.get("document_ids"):
        conditions["document_id__in"] = query.options["document_ids"]
    return DocumentChunk.objects.filter(project=project, **conditions)


def chunk_source(*, project: Project, query: SearchQuery, limit: int) -> list[SourceHit]:
    """The `documents` source: the best `limit` chunks for the query."""
    chunks = chunk_queryset(project=project, query=query)
    if query.mode == "graph":
        hits = _graph_ranked(chunks, query, project, limit)
    else:
        hits = _text_ranked(chunks, query, project, limit)
    hits.sort(key=lambda hit: (-hit.score, hit.memory.pk))
    return [
        SourceHit(
            SOURCE,
            hit.memory.pk,
            hit.score,
            hit.memory.token_count,
            hit.memory,
            hit.parts,
            summary_tokens=hit.memory.summary_tokens if hit.memory.summary else 0,
        )
        for hit in hits[:limit]
    ]


def _text_ranked(
    chunks: QuerySet[DocumentChunk], query: SearchQuery, project: Project, limit: int
) -> list[SearchHit]:
    keyword = KeywordSide([])
    semantic: Ranked = []
    if query.mode != "semantic":
        keyword = _keyword_ranked(chunks, query.text, project_id=project.pk, limit=limit)
    if query.mode != "keyword":
        semantic = _semantic_side(chunks, query, project, limit)
    if query.mode == "keyword":
        top = max((rank for _, rank in keyword.ranked), default=0.0) or 1.0
        return [SearchHit(c, rank / top, {"keyword": rank / top}) for c, rank in keyword.ranked]
    if query.mode == "semantic":
        return [SearchHit(c, max(sim, 0.0), {"semantic": sim}) for c, sim in semantic]
    hits = fuse(keyword, semantic, query.options)
    if query.options.get("boosts", True):
        _graph_boost(project, query, hits)
    return hits


def _graph_boost(project: Project, query: SearchQuery, hits: list[SearchHit]) -> None:
    """Hybrid: the memories' graph boost, for chunks (entities.selectors.search.graph_boost):
    a chunk mentioning what the question names or a neighbour of it gains a share of its
    relevance, up to `graph_weight` of it, each entity weighted by its specificity."""
    if not hits:
        return
    scores = graph_boost_scores(project=project, query=query)
    if not scores:
        return
    weight = check_unit_interval("graph_weight", query.options.get("graph_weight", BOOST_WEIGHT))
    ranked = chunk_graph_scores(project, scores, [hit.memory.pk for hit in hits])
    for hit in hits:
        score, via = ranked.get(hit.memory.pk, (0.0, []))
        if score > 0:
            amount = graph_share(weight, score, hit.score)
            hit.score += amount
            hit.parts["graph"] = amount
            hit.memory.graph_entities = via


def _graph_ranked(
    chunks: QuerySet[DocumentChunk], query: SearchQuery, project: Project, limit: int
) -> list[SearchHit]:
    """`graph` mode: the chunks mentioning the question's entities or their neighbours,
    ranked as graph search ranks memories (noisy-OR of entity score × mention relevance)."""
    scope = query_scope(query)
    seeds = entities_in_text(project=project, text=query.text, scope=scope)
    if not seeds:
        return []
    depth = query.options.get("depth", DEFAULT_DEPTH)
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= MAX_DEPTH:
        raise InvalidInput("depth must be an integer 0-5", fields={"depth": ["integer 0-5"]})
    scores = entity_scores(project=project, seeds=seeds, depth=depth, scope=scope)
    ranked = chunk_graph_scores(project, scores, chunks.values("pk"))
    best = sorted(ranked.items(), key=lambda item: (-item[1][0], item[0]))[:limit]
    rows = chunks.only("pk", "token_count", "summary", "summary_tokens").in_bulk(
        [pk for pk, _ in best]
    )
    hits = []
    for pk, (score, via) in best:
        if pk in rows:
            rows[pk].graph_entities = via
            hits.append(SearchHit(rows[pk], score, {"graph": score, "entities": float(len(via))}))
    return hits


def chunk_graph_scores(
    project: Project, scores: dict[int, float], chunk_ids: Any
) -> dict[int, tuple[float, list[int]]]:
    """{chunk id: (noisy-OR of entity score × mention relevance, the entities)} for the
    chunks among `chunk_ids` (ids, or a queryset of `pk` values) that mention an entity of
    `scores`."""
    links = ChunkEntity.objects.filter(project=project, entity_id__in=list(scores))
    links = links.filter(chunk_id__in=chunk_ids)
    misses: dict[int, float] = defaultdict(lambda: 1.0)
    via: dict[int, list[int]] = defaultdict(list)
    for chunk_id, entity_id, relevance in links.values_list("chunk_id", "entity_id", "relevance"):
        misses[chunk_id] *= 1.0 - min(1.0, scores[entity_id] * relevance)
        via[chunk_id].append(entity_id)
    return {pk: (1.0 - miss, via[pk]) for pk, miss in misses.items()}


def _tsquery(count: int) -> str:
    """Any of `count` lexemes, as memories' keyword search writes it (not normalised again)."""
    return "(" + " || ".join("quote_literal(%s)::tsquery" for _ in range(count)) + ")"


def _keyword_ranked(
    chunks: QuerySet[DocumentChunk], text: str, *, project_id: int, limit: int
) -> KeywordSide:
    """The best `limit` chunks holding any query term (`ts_rank_cd`), each with the
    IDF-weighted share of the query's terms it holds, the frequencies counted over every
    matching chunk by window functions of the same statement (as memories' keyword side)."""
    lexemes = query_lexemes(text, project_id=project_id)
    if not lexemes:
        return KeywordSide([])
    tsquery = _tsquery(len(lexemes))
    column = f'"{TABLE}"."search_vector"'
    term = f"{column} @@ quote_literal(%s)::tsquery"
    held = "ARRAY[" + ", ".join(term for _ in lexemes) + "]"
    dfs = "ARRAY[" + ", ".join(f"count(*) FILTER (WHERE {term}) OVER ()" for _ in lexemes) + "]"
    rows = (
        chunks.annotate(
            matched=RawSQL(f"{column} @@ {tsquery}", lexemes, output_field=BooleanField()),
            rank=RawSQL(f"ts_rank_cd({column}, {tsquery}, 1)", lexemes, output_field=FloatField()),
            held=RawSQL(held, lexemes, output_field=ArrayField(BooleanField())),
            total=RawSQL("count(*) OVER ()", [], output_field=FloatField()),
            dfs=RawSQL(dfs, lexemes, output_field=ArrayField(FloatField())),
        )
        .filter(matched=True)
        .only("pk", "token_count", "summary", "summary_tokens")
        .order_by("-rank", "pk")[:limit]
    )
    rows = list(rows)
    weights = idf_weights(rows[0].total, rows[0].dfs) if rows else []  # type: ignore[attr-defined]
    coverage = {row.pk: idf_coverage(row.held, weights) for row in rows}  # type: ignore[attr-defined]
    ranked: Ranked = [(row, float(row.rank)) for row in rows]  # type: ignore[attr-defined]
    return KeywordSide(ranked, coverage, dict(zip(lexemes, weights, strict=False)))


def _semantic_side(
    chunks: QuerySet[DocumentChunk], query: SearchQuery, project: Project, limit: int
) -> Ranked:
    try:
        vector = query_vector(query.text, project_id=project.pk)
    except ProviderError as exc:
        if query.mode == "semantic":
            raise
        logger.warning("document search without vectors: %s", exc)
        return []
    floor = min_similarity_of(query)
    rows = (
        chunks.filter(embedding__isnull=False)
        .annotate(distance=CosineDistance("embedding", vector))
        .only("pk", "token_count", "summary", "summary_tokens")
        .order_by("distance")[:limit]
    )
    ranked = [(row, 1.0 - float(row.distance)) for row in rows]  # type: ignore[attr-defined]
    return [(row, sim) for row, sim in ranked if floor <= 0 or sim >= floor]


def render(*, project: Project, query: SearchQuery, hits: list[SourceHit]) -> list[dict[str, Any]]:
    """The JSON of the page's chunk hits, with their document and a highlighted snippet."""
    lexemes = query_lexemes(query.text, project_id=project.pk)
    chunks = DocumentChunk.objects.filter(project=project, pk__in=[hit.key for hit in hits])
    chunks = chunks.select_related("document")
    if lexemes:
        headline = f'ts_headline(%s::regconfig, "{TABLE}"."content", {_tsquery(len(lexemes))}, %s)'
        params = [TEXT_SEARCH_CONFIG, *lexemes, HEADLINE_OPTIONS]
        chunks = chunks.annotate(snippet=RawSQL(headline, params))
    by_id = {chunk.pk: chunk for chunk in chunks}
    via = {hit.key: getattr(hit.item, "graph_entities", []) for hit in hits}
    named = _entities(project, [pk for ids in via.values() for pk in ids])
    return [
        chunk_hit_body(
            by_id.get(hit.key, hit.item),
            score=hit.score,
            parts=hit.parts,
            snippet=getattr(by_id.get(hit.key), "snippet", None),
            entities=[named[pk] for pk in via[hit.key] if pk in named],
            summarized=hit.summarized,
        )
        for hit in hits
    ]


def _entities(project: Project, ids: list[int]) -> dict[int, dict[str, Any]]:
    rows = Entity.objects.filter(project=project, pk__in=set(ids))
    return {
        pk: {"id": pk, "name": name, "entity_type": kind}
        for pk, name, kind in rows.values_list("pk", "name", "entity_type")
    }


chunk_source.source_name = SOURCE  # type: ignore[attr-defined]
chunk_source.render = render  # type: ignore[attr-defined]
