"""Summaries searched beside the content: a long memory is also found by its summary's words
and by its summary's vector (services/summaries.py).

Each mode ranks the content as it always has; `with_summaries` then adds what the summaries
match, from two small statements over the partial indexes that hold only summarised memories
(`memory_summary_words`, `memory_summary_hnsw`), within the same filters:

- keyword: a memory already found keeps its rank; one found by its summary alone ranks after
  the content's matches (its `ts_rank_cd` scaled under the lowest of them); for hybrid's
  calibrated fusion each covers the query by the IDF-weighted share of the query's terms its
  summary holds (`keyword_matches_with_summaries`);
- semantic: a memory's similarity is the better of its content's and its summary's.

A project none of whose memories has a summary skips both statements (`has_summaries`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db.models import BooleanField, FloatField
from django.db.models.expressions import RawSQL
from pgvector.django import CosineDistance

from memories.models import TEXT_SEARCH_CONFIG, Memory
from memories.selectors.search.dispatch import SearchBase, candidate, candidate_columns
from memories.selectors.search.fusion import idf_coverage, idf_weights
from memories.selectors.search.keyword import KeywordSide
from memories.selectors.search_types import Ranked
from memories.services.summaries import has_summaries

# the expression of the `memory_summary_words` index, as Django writes SearchVector("summary")
_WORDS = (
    f"to_tsvector('{TEXT_SEARCH_CONFIG}'::regconfig, "
    f'COALESCE("{Memory._meta.db_table}"."summary", \'\'))'
)


def with_summaries(
    *,
    project_id: int,
    base: SearchBase,
    keyword: Ranked | None,
    semantic: Ranked | None,
    lexemes: list[str],
    vector: list[float] | None,
    limit: int,
    min_similarity: float,
) -> tuple[Ranked | None, Ranked | None]:
    """`keyword` and `semantic` (None: that side did not run) with the summaries' matches."""
    if not has_summaries(project_id):
        return keyword, semantic
    if keyword is not None and lexemes:
        found = _words_ranked(base, lexemes, limit)
        keyword = _merged_keyword(keyword, [(memory, rank) for memory, rank, _ in found])
    if semantic is not None and vector is not None:
        found = _nearest_ranked(base, vector, limit, min_similarity)
        semantic = _merged_semantic(semantic, found, limit)
    return keyword, semantic


def keyword_matches_with_summaries(
    *, project_id: int, base: SearchBase, side: KeywordSide, lexemes: list[str], limit: int
) -> KeywordSide:
    """The keyword side (`keyword.keyword_side`) with what the summaries match, merged as
    `with_summaries` merges them; a memory found by its summary covers the query by the
    terms its summary holds (`idf_coverages`), or by its content's, whichever is more."""
    if not lexemes or not has_summaries(project_id):
        return side
    found = _words_ranked(base, lexemes, limit)
    if not found:
        return side
    ranked = _merged_keyword(side.ranked, [(memory, rank) for memory, rank, _ in found])
    coverage = dict(side.coverage)
    known = {memory.pk for memory, _ in side.ranked}
    for pk, share in idf_coverages(found, lexemes, side.idf).items():
        if pk not in known or pk in coverage:  # a strict content match covers the query
            coverage[pk] = max(coverage.get(pk, 0.0), share)
    return KeywordSide(ranked, coverage, side.idf)


def idf_coverages(
    found: list[tuple[Any, float, list[bool]]], lexemes: list[str], idf: dict[str, float]
) -> dict[Any, float]:
    """{pk: IDF-weighted share of the query's terms} of summary matches (memory, rank, the
    terms held), weighted by the content's statement (`idf`) or, when it matched nothing,
    by the frequencies among these matches."""
    if all(lexeme in idf for lexeme in lexemes):
        weights = [idf[lexeme] for lexeme in lexemes]
    else:
        counts = [sum(held[i] for _, _, held in found) for i in range(len(lexemes))]
        weights = idf_weights(len(found), counts)
    return {memory.pk: idf_coverage(held, weights) for memory, _, held in found}


def _rows(queryset: Any, base: SearchBase, *last: str) -> list[tuple[Any, ...]]:
    columns = list(candidate_columns())
    confidence = ["effective_confidence"] if base.confidence else []
    rows = queryset.values_list(*columns, *confidence, *last)
    start = len(columns) + len(confidence)
    return [
        (candidate(row, row[len(columns)] if confidence else None), *row[start:]) for row in rows
    ]


def _words_ranked(
    base: SearchBase, lexemes: list[str], limit: int
) -> list[tuple[Any, float, list[bool]]]:
    """(memory, ts_rank_cd, which query terms its summary holds) of the best summary matches."""
    tsquery = "(" + " || ".join("quote_literal(%s)::tsquery" for _ in lexemes) + ")"
    held = "ARRAY[" + ", ".join(f"{_WORDS} @@ quote_literal(%s)::tsquery" for _ in lexemes) + "]"
    queryset = (
        base.queryset()
        .exclude(summary="")
        .annotate(
            summary_match=RawSQL(f"{_WORDS} @@ {tsquery}", lexemes, output_field=BooleanField()),
            summary_rank=RawSQL(
                f"ts_rank_cd({_WORDS}, {tsquery}, 1)", lexemes, output_field=FloatField()
            ),
            summary_terms=RawSQL(held, lexemes, output_field=ArrayField(BooleanField())),
        )
        .filter(summary_match=True)
        .order_by("-summary_rank", "pk")[:limit]
    )
    rows = _rows(queryset, base, "summary_rank", "summary_terms")
    return [(row, float(rank), list(terms)) for row, rank, terms in rows]


def _nearest_ranked(
    base: SearchBase, vector: list[float], limit: int, min_similarity: float
) -> Ranked:
    queryset = (
        base.queryset()
        .filter(summary_embedding__isnull=False)
        .annotate(summary_distance=CosineDistance("summary_embedding", vector))
        .order_by("summary_distance")[:limit]
    )
    ranked = [(row, 1.0 - float(d)) for row, d in _rows(queryset, base, "summary_distance")]
    return [(row, sim) for row, sim in ranked if min_similarity <= 0 or sim >= min_similarity]


def _merged_keyword(ranked: Ranked, found: Ranked) -> Ranked:
    known = {memory.pk for memory, _ in ranked}
    extra = [(memory, rank) for memory, rank in found if memory.pk not in known]
    if not extra:
        return ranked
    floor = min((score for _, score in ranked), default=0.0)
    top = max(rank for _, rank in extra) or 1.0
    scale = floor * 0.99 if floor > 0 else 1.0
    return ranked + [(memory, scale * rank / top) for memory, rank in extra]


def _merged_semantic(ranked: Ranked, found: Ranked, limit: int) -> Ranked:
    best: dict[Any, tuple[Any, float]] = {memory.pk: (memory, sim) for memory, sim in ranked}
    for memory, similarity in found:
        if memory.pk not in best or best[memory.pk][1] < similarity:
            kept = best.get(memory.pk, (memory, 0.0))[0]
            best[memory.pk] = (kept, similarity)
    merged = sorted(best.values(), key=lambda pair: -pair[1])
    return merged[: max(limit, len(ranked))]
