"""Keyword mode: PostgreSQL full-text search on the generated, weighted tsvector.

Plain queries match memories containing *any* of their terms (stemmed, stop words dropped)
and rank those with more, rarer terms first, which is what a question needs ("what did
Caroline paint last summer?" shares two words with the answer, not all six). Web-search
syntax ("quoted phrases", -excluded words) switches to `websearch_to_tsquery`'s strict
semantics; `options={"keyword_match": "all"}` forces it.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.postgres.search import SearchConfig, SearchQuery, SearchQueryField
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


def text_query(text: str, *, match: str = "any") -> Any:
    if match == "all" or _WEBSEARCH_SYNTAX.search(text):
        return SearchQuery(text, search_type="websearch", config=TEXT_SEARCH_CONFIG)
    return AnyTermQuery(SearchConfig(TEXT_SEARCH_CONFIG), Value(text))


def keyword_ranked(
    queryset: QuerySet[Memory], text: str, *, limit: int, match: str = "any"
) -> list[tuple[Memory, float]]:
    """(memory, ts_rank_cd) for the best `limit` matches of `text` within `queryset`."""
    tsquery = text_query(text, match=match)
    rows = (
        queryset.filter(Matches(F("search_vector"), tsquery))
        .annotate(keyword_rank=RankCD(F("search_vector"), tsquery, Value(RANK_NORMALIZATION)))
        .order_by("-keyword_rank", "-created_at")[:limit]
    )
    return [(row, float(row.keyword_rank)) for row in rows]


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
