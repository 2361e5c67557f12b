"""Search over document chunks, plugged into memory search as the `documents` source
(`extra_search_sources` hook; memories.selectors.search.sources).

The chunks of the caller's project whose document is in the query's scope (user_id,
agent_id, run_id as given, and the created_after/before dates of the document; filters that
only memories have, such as memory types or tags, do not narrow documents) are ranked like
memories: keyword matches (any query term, the GIN index on the chunk's tsvector, ranked by
`ts_rank_cd`), nearest vectors (HNSW, cosine, the same similarity floor), and in hybrid mode
both fused by the memory search's own fusion (`memories.selectors.search.hybrid.fuse`). A
chunk not embedded yet is found by its keywords. `graph` mode searches chunks as hybrid.
The page's hits get a highlighted snippet (`ts_headline`) when rendered.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import BooleanField, FloatField, QuerySet
from django.db.models.expressions import RawSQL
from pgvector.django import CosineDistance

from documents.models import DocumentChunk
from documents.representations import chunk_hit_body
from memories.models import TEXT_SEARCH_CONFIG
from memories.selectors.search.hybrid import fuse
from memories.selectors.search.keyword import query_lexemes
from memories.selectors.search.semantic import min_similarity_of, query_vector
from memories.selectors.search.sources import SourceHit
from memories.selectors.search_types import Ranked, SearchHit, SearchQuery
from memoryplatform.lib.errors import ProviderError
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
    keyword: Ranked = []
    semantic: Ranked = []
    if query.mode != "semantic":
        keyword = _keyword_ranked(chunks, query.text, project_id=project.pk, limit=limit)
    if query.mode != "keyword":
        semantic = _semantic_side(chunks, query, project, limit)
    if query.mode == "keyword":
        top = max((rank for _, rank in keyword), default=0.0) or 1.0
        hits = [SearchHit(c, rank / top, {"keyword": rank / top}) for c, rank in keyword]
    elif query.mode == "semantic":
        hits = [SearchHit(c, max(sim, 0.0), {"semantic": sim}) for c, sim in semantic]
    else:
        hits = fuse(keyword, semantic, query.options)
    hits.sort(key=lambda hit: (-hit.score, hit.memory.pk))
    return [
        SourceHit(SOURCE, hit.memory.pk, hit.score, hit.memory.token_count, hit.memory, hit.parts)
        for hit in hits[:limit]
    ]


def _tsquery(count: int) -> str:
    """Any of `count` lexemes, as memories' keyword search writes it (not normalised again)."""
    return "(" + " || ".join("quote_literal(%s)::tsquery" for _ in range(count)) + ")"


def _keyword_ranked(
    chunks: QuerySet[DocumentChunk], text: str, *, project_id: int, limit: int
) -> Ranked:
    lexemes = query_lexemes(text, project_id=project_id)
    if not lexemes:
        return []
    tsquery = _tsquery(len(lexemes))
    column = f'"{TABLE}"."search_vector"'
    rows = (
        chunks.annotate(
            matched=RawSQL(f"{column} @@ {tsquery}", lexemes, output_field=BooleanField()),
            rank=RawSQL(f"ts_rank_cd({column}, {tsquery}, 1)", lexemes, output_field=FloatField()),
        )
        .filter(matched=True)
        .only("pk", "token_count")
        .order_by("-rank", "pk")[:limit]
    )
    return [(row, float(row.rank)) for row in rows]  # type: ignore[attr-defined]


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
        .only("pk", "token_count")
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
    return [
        chunk_hit_body(
            by_id.get(hit.key, hit.item),
            score=hit.score,
            parts=hit.parts,
            snippet=getattr(by_id.get(hit.key), "snippet", None),
        )
        for hit in hits
    ]


chunk_source.source_name = SOURCE  # type: ignore[attr-defined]
chunk_source.render = render  # type: ignore[attr-defined]
