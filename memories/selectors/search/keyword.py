"""Keyword mode: PostgreSQL full-text search on the generated, weighted tsvector.

Plain queries match memories containing *any* of their terms (stemmed, stop words dropped):
a question shares two words with its answer, rarely all six. Matches are ranked by the sum
of the BM25 inverse document frequencies of the query terms they contain, the frequencies
counted over the matching memories by window functions in the same SQL (no second scan), so
a rare term ("pottery") outweighs one that half the memories contain (a speaker's name);
`ts_rank_cd` (content weighted above context, closer terms first) breaks ties. On LoCoMo this
ranks the evidence turn in the top 10 for 0.66 of questions, against 0.56 for `ts_rank_cd`
alone (docs/benchmarks.md). Web-search syntax ("quoted phrases", -excluded words) switches to
`websearch_to_tsquery`'s strict semantics, ranked by `ts_rank_cd`;
`options={"keyword_match": "all"}` forces it.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.postgres.search import SearchConfig, SearchQuery, SearchQueryField
from django.db import connection
from django.db.models import BooleanField, F, FloatField, Func, QuerySet, Value

from memories.models import TEXT_SEARCH_CONFIG, Memory
from memories.selectors.search.dispatch import candidate_count, search_queryset
from memories.selectors.search_types import SearchHit
from memories.selectors.search_types import SearchQuery as MemorySearchQuery
from tenants.models import Project

_WEBSEARCH_SYNTAX = re.compile(r'"|(^|\s)-\w')
# ts_rank_cd normalisation 1|4: divide by 1 + log(length) and by the mean harmonic distance
# between matched terms, so short memories matching several terms close together rank first.
RANK_NORMALIZATION = 1
MAX_TERMS = 32  # a pasted paragraph is not a better query than its first 32 distinct terms


class AnyTermQuery(Func):
    """plainto_tsquery's lexemes OR-ed together (phrases from hyphenated words kept)."""

    template = "replace(plainto_tsquery(%(expressions)s)::text, ' & ', ' | ')::tsquery"
    output_field = SearchQueryField()


class Matches(Func):
    template = "%(expressions)s"
    arg_joiner = " @@ "
    output_field = BooleanField()


class RankCD(Func):
    function = "ts_rank_cd"
    output_field = FloatField()


def keyword_ranked(
    queryset: QuerySet[Memory], text: str, *, limit: int, match: str = "any"
) -> list[tuple[Memory, float]]:
    """(memory, score) for the best `limit` matches of `text` within `queryset`."""
    if match == "all" or _WEBSEARCH_SYNTAX.search(text):
        return _strict_ranked(queryset, text, limit=limit)
    lexemes = query_lexemes(text)
    if not lexemes:
        return []
    scored = _idf_scores(queryset, text, lexemes, limit=limit)
    rows = queryset.filter(pk__in=list(scored))
    ranked = [(row, scored[row.pk]) for row in rows]
    return sorted(ranked, key=lambda pair: -pair[1])


def _strict_ranked(
    queryset: QuerySet[Memory], text: str, *, limit: int
) -> list[tuple[Memory, float]]:
    tsquery = SearchQuery(text, search_type="websearch", config=TEXT_SEARCH_CONFIG)
    rows = (
        queryset.filter(Matches(F("search_vector"), tsquery))
        .annotate(keyword_rank=RankCD(F("search_vector"), tsquery, Value(RANK_NORMALIZATION)))
        .order_by("-keyword_rank", "-created_at")[:limit]
    )
    return [(row, float(row.keyword_rank)) for row in rows]


def query_lexemes(text: str) -> list[str]:
    """The query's distinct lexemes as the index stores them (stemmed, no stop words)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(tsvector_to_array(to_tsvector(%s::regconfig, %s)), '{}')",
            [TEXT_SEARCH_CONFIG, text],
        )
        return list(cursor.fetchone()[0])[:MAX_TERMS]


def _idf_scores(
    queryset: QuerySet[Memory], text: str, lexemes: list[str], *, limit: int
) -> dict[Any, float]:
    """{pk: Σ idf(term) over the query terms the memory contains} for the top `limit`."""
    tsquery = AnyTermQuery(SearchConfig(TEXT_SEARCH_CONFIG), Value(text))
    inner, params = (
        queryset.filter(Matches(F("search_vector"), tsquery))
        .values_list("pk", "search_vector")
        .query.sql_with_params()
    )
    term = "quote_literal(%s)::tsquery"
    idf_terms = []
    for _ in lexemes:
        df = f"count(*) FILTER (WHERE m.sv @@ {term}) OVER ()"
        idf = f"ln(1 + (count(*) OVER () - {df} + 0.5) / ({df} + 0.5))"
        idf_terms.append(f"{idf} * (m.sv @@ {term})::int")
    sql = (
        f"SELECT m.id, {' + '.join(idf_terms)} AS score,"
        f" ts_rank_cd(m.sv, replace(plainto_tsquery(%s::regconfig, %s)::text, ' & ', ' | ')"
        f"::tsquery, {RANK_NORMALIZATION}) AS tie"
        f" FROM ({inner}) AS m(id, sv) ORDER BY score DESC, tie DESC LIMIT %s"
    )
    term_params: list[Any] = []
    for lexeme in lexemes:
        term_params += [lexeme, lexeme, lexeme]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*term_params, TEXT_SEARCH_CONFIG, text, *params, limit])
        return {pk: float(score) + float(tie) * 1e-3 for pk, score, tie in cursor.fetchall()}


def keyword_search(*, project: Project, query: MemorySearchQuery) -> list[SearchHit]:
    ranked = keyword_ranked(
        search_queryset(project=project, query=query),
        query.text,
        limit=candidate_count(query),
        match=query.options.get("keyword_match", "any"),
    )
    top = max((rank for _, rank in ranked), default=0.0) or 1.0
    return [
        SearchHit(
            memory=memory, score=rank / top, parts={"keyword": rank / top, "keyword_rank": rank}
        )
        for memory, rank in ranked
    ]
