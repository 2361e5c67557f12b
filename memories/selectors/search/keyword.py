"""Keyword mode: PostgreSQL full-text search on the generated, weighted tsvector.

Plain queries match memories containing *any* of their terms (stemmed, stop words dropped):
a question shares two words with its answer, rarely all six. Matches are ranked by the sum
of the BM25 inverse document frequencies of the query terms they contain, the frequencies
counted over the matching memories by window functions in the same SQL (no second scan), so
a rare term ("pottery") outweighs one that half the memories contain (a speaker's name);
`ts_rank_cd` (content weighted above context, closer terms first) breaks ties. The work is
bounded: at most MEMORY_SEARCH_TERM_CAP (100) memories are read per term, plus as many
containing every term, so a common word costs the same at 1k or 1M memories (exact below
the cap; see `_idf_ranked`); in a large project a word most memories hold is read from the
newest memories, not from the index (`_sample_budget`). On LoCoMo this
ranks the evidence turn in the top 10 for 0.66 of questions, against 0.56 for `ts_rank_cd`
alone (docs/benchmarks.md). Web-search syntax ("quoted phrases", -excluded words) switches to
`websearch_to_tsquery`'s strict semantics, ranked by `ts_rank_cd`;
`options={"keyword_match": "all"}` forces it.
"""

from __future__ import annotations

import functools
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.postgres.search import SearchQuery
from django.db import connection, connections
from django.db.models import BooleanField, F, FloatField, Func, QuerySet, Value

from memories.models import TEXT_SEARCH_CONFIG, Memory
from memories.selectors.memories import project_share
from memories.selectors.search.dispatch import (
    SearchBase,
    candidate,
    candidate_columns,
    candidate_count,
    compiled_search_base,
    search_base,
)
from memories.selectors.search.fusion import idf_coverage, idf_weights
from memories.selectors.search.statements import fetch_with_settings
from memories.selectors.search_types import Ranked, SearchHit
from memories.selectors.search_types import SearchQuery as MemorySearchQuery
from platformcore.db.citus import shard_statistics
from platformcore.db.rls import as_owner
from platformcore.lib.stages import stage
from tenants.models import Project

_WEBSEARCH_SYNTAX = re.compile(r'"|(^|\s)-\w')
# ts_rank_cd normalisation 1|4: divide by 1 + log(length) and by the mean harmonic distance
# between matched terms, so short memories matching several terms close together rank first.
RANK_NORMALIZATION = 1
MAX_TERMS = 32  # a pasted paragraph is not a better query than its first 32 distinct terms
TIE_BREAK_POOL = 3  # ts_rank_cd orders the best limit × 3 rows by score, not every match


class Matches(Func):
    template = "%(expressions)s"
    arg_joiner = " @@ "
    output_field = BooleanField()


class RankCD(Func):
    function = "ts_rank_cd"
    output_field = FloatField()


@dataclass
class KeywordSide:
    """A keyword ranking and how much of the query each match holds: `coverage` {pk: the
    IDF-weighted share of the query's terms it contains} (search/fusion.py), `idf` {lexeme:
    weight} for matches found elsewhere (the summaries'). A strict (all terms) match covers
    the whole query and is left out of `coverage`."""

    ranked: Ranked
    coverage: dict[Any, float] = field(default_factory=dict)
    idf: dict[str, float] = field(default_factory=dict)


def keyword_ranked(
    queryset: QuerySet[Memory] | SearchBase,
    text: str,
    *,
    limit: int,
    match: str = "any",
    share: float = 1.0,
    project_id: int | None = None,
) -> Ranked:
    """(memory, score) for the best `limit` matches of `text` within `queryset`, the memories
    of a project holding `share` of the table (`project_share`)."""
    return keyword_side(
        queryset, text, limit=limit, match=match, share=share, project_id=project_id
    ).ranked


def keyword_side(
    queryset: QuerySet[Memory] | SearchBase,
    text: str,
    *,
    limit: int,
    match: str = "any",
    share: float = 1.0,
    project_id: int | None = None,
) -> KeywordSide:
    """`keyword_ranked`'s matches with the share of the query each holds (one statement)."""
    with stage("keyword"):
        return _keyword_side(
            search_base(queryset),
            text,
            limit=limit,
            match=match,
            share=share,
            project_id=project_id,
        )


def _keyword_side(
    base: SearchBase, text: str, *, limit: int, match: str, share: float, project_id: int | None
) -> KeywordSide:
    if match == "all" or _WEBSEARCH_SYNTAX.search(text):
        return KeywordSide(_strict_ranked(base.queryset(), text, limit=limit))
    lexemes = query_lexemes(text, project_id=project_id)
    if not lexemes:
        return KeywordSide([])
    return _idf_ranked(base, lexemes, limit=limit, share=share)


def _strict_ranked(queryset: QuerySet[Memory], text: str, *, limit: int) -> Ranked:
    tsquery = SearchQuery(text, search_type="websearch", config=TEXT_SEARCH_CONFIG)
    rows = (
        queryset.filter(Matches(F("search_vector"), tsquery))
        .annotate(keyword_rank=RankCD(F("search_vector"), tsquery, Value(RANK_NORMALIZATION)))
        .order_by("-keyword_rank", "-created_at")[:limit]
    )
    return [(row, float(row.keyword_rank)) for row in rows]


LEXEME_CACHE_SIZE = 1024  # queries whose lexemes are remembered per process


def query_lexemes(text: str, *, project_id: int | None = None) -> list[str]:
    """The query's distinct lexemes as the index stores them (stemmed, no stop words).
    Recent queries' are remembered per process and project, as their embeddings are
    (semantic.py): agents repeat their searches, and asking PostgreSQL is a round trip (~0.7
    ms of a keyword search on a busy 2-vCPU VM). Per project, so a query's speed never tells
    one tenant what another searched for."""
    return list(_cached_lexemes(project_id, text))


@functools.lru_cache(maxsize=LEXEME_CACHE_SIZE)
def _cached_lexemes(project_id: int | None, text: str) -> tuple[str, ...]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(tsvector_to_array(to_tsvector(%s::regconfig, %s)), '{}')",
            [TEXT_SEARCH_CONFIG, text],
        )
        return tuple(cursor.fetchone()[0][:MAX_TERMS])


def _idf_ranked(
    base: SearchBase, lexemes: list[str], *, limit: int, share: float = 1.0
) -> KeywordSide:
    """(memory, Σ idf(term) over the query terms it contains) for the top `limit`, best
    first, each memory loaded with the candidate fields (and effective_confidence when the
    queryset has it) by the same statement, which also returns the terms each holds and
    the frequencies, for its coverage of the query (the IDF-weighted share of its terms).

    Scored over a bounded candidate set so a common word costs the same at 1k or 1M
    memories: for each term at most `term_cap` matching memories, plus up to `term_cap`
    matching all the terms. Below the cap (any term in fewer memories) the set is every
    memory matching any term and the scores are exact; above it, a term's frequency counts
    as its share of the candidates. The tie-break (`ts_rank_cd`) runs on the best rows only.
    """
    cap = settings.MEMORY_SEARCH_TERM_CAP
    skipped = _skipped_terms(lexemes, cap, base.db, share)
    # The branches are plain SQL around the compiled base (PostgreSQL pulls the subquery up,
    # so each branch is one GIN scan with the filters): compiling a queryset per branch with
    # a flag per term cost more in Python than the statement itself.
    conditions = [[i] for i in range(len(lexemes)) if i not in skipped]
    if len(lexemes) > 1:
        conditions.append(list(range(len(lexemes))))  # memories with every term
    samples, sample_params, sql_parts, params = [], [], [], []
    for number, terms in enumerate(conditions):
        index_branch = (
            f"SELECT b.id, {_flags(lexemes, 'b')} FROM {base.source('b')}"
            f" WHERE {_all_of(terms, 'b')}"
        )
        index_params = [*lexemes, *base.params, *(lexemes[i] for i in terms)]
        budget = _sample_budget([lexemes[i] for i in terms], cap, base, share)
        if budget is None:
            sql_parts.append(f"({index_branch} LIMIT %s)")
            params += [*index_params, cap]
            continue
        # the newest `budget` memories first; the index only when they hold too few matches
        name = f"sample{number}"
        samples.append(
            f"{name} AS MATERIALIZED (SELECT r.id, {_flags(lexemes, 'r')}"
            f" FROM (SELECT b.id, b.sv FROM {base.source('b')}"
            f" ORDER BY b.created_at DESC LIMIT %s) AS r WHERE {_all_of(terms, 'r')} LIMIT %s)"
        )
        sample_params += [*lexemes, *base.params, budget, *(lexemes[i] for i in terms), cap]
        sql_parts.append(
            f"(SELECT * FROM {name}) UNION ALL"
            f" ({index_branch} AND (SELECT count(*) FROM {name}) < %s LIMIT %s)"
        )
        params += [*index_params, max(1, math.ceil(cap * SAMPLE_ENOUGH)), cap]
    columns = [f"t{i}" for i in range(len(lexemes))]
    idf_terms, dfs = [], []
    # A skipped term counts as if its branch had brought its `cap` memories (all of them
    # with the term, none with the others): the frequencies are those of the full statement.
    total = f"(count(*) OVER () + {len(skipped) * cap})::float8"
    for i, column in enumerate(columns):
        # float8 throughout: ln() on numeric (what count() + 0.5 would be) costs ~2 µs a row
        extra = cap if i in skipped else 0
        df = f"(count(*) FILTER (WHERE {column}) OVER () + {extra})::float8"
        dfs.append(df)
        idf_terms.append(f"ln(1 + ({total} - {df} + 0.5) / ({df} + 0.5)) * {column}::int")
    # The best rows are read back through the base (one index probe each), which also
    # computes the effective confidence ranking needs: no second round trip for the rows.
    fields = list(candidate_columns())
    any_term = " || ".join("quote_literal(%s)::tsquery" for _ in lexemes)
    sql = f"""
        WITH {"".join(f"{sample}, " for sample in samples)}candidates AS (
            SELECT id, {", ".join(f"bool_or({c}) AS {c}" for c in columns)}
            FROM ({" UNION ALL ".join(sql_parts)}) AS u(id, {", ".join(columns)})
            GROUP BY id
        ), scored AS (
            SELECT id, {" + ".join(idf_terms)} AS score, ARRAY[{", ".join(columns)}] AS held,
                {total} AS total, ARRAY[{", ".join(dfs)}] AS dfs
            FROM candidates
        ), best AS (
            SELECT id, score, held, total, dfs FROM scored ORDER BY score DESC LIMIT %s
        )
        SELECT {", ".join(f"r.{field}" for field in fields)}, r.ec, best.score,
            ts_rank_cd(r.sv, {any_term}, {RANK_NORMALIZATION}) AS tie,
            best.held, best.total, best.dfs
        FROM best JOIN {base.source("r")} ON r.id = best.id
        ORDER BY best.score DESC, tie DESC LIMIT %s
    """
    params = [*sample_params, *params, limit * TIE_BREAK_POOL, *lexemes, *base.params, limit]
    fetched = _fetch_without_sequential_scans(base.db, sql, params)
    # every row carries the statement's frequencies: a query's terms weigh in its coverage
    # what they weigh in its ranking
    weights = idf_weights(fetched[0][-2], fetched[0][-1]) if fetched else []
    side = KeywordSide([], {}, dict(zip(lexemes, weights, strict=False)))
    for row in fetched:
        found = candidate(row, row[len(fields)] if base.confidence else None)
        score, tie, held = row[-5], row[-4], row[-3]
        side.ranked.append((found, float(score) + float(tie) * 1e-3))
        side.coverage[found.pk] = idf_coverage(held, weights)
    return side


_TERM = "{alias}.sv @@ quote_literal(%s)::tsquery"  # folded to a constant at plan time


def _flags(lexemes: list[str], alias: str) -> str:
    """One boolean column per query term: does the row of `alias` hold it."""
    return ", ".join(f"{_TERM.format(alias=alias)} AS t{i}" for i in range(len(lexemes)))


def _all_of(terms: list[int], alias: str) -> str:
    return " AND ".join(_TERM.format(alias=alias) for _ in terms)


def _sample_budget(terms: list[str], cap: int, base: SearchBase, share: float) -> int | None:
    """How many of the project's newest memories a branch for `terms` reads instead of
    scanning the keyword index, or None to scan the index.

    A GIN index has bitmap scans only: a branch reads every posting of its terms before its
    LIMIT applies. For a term in a large share of a large project that is most of the work,
    where the newest memories along the (project, created_at) index hold `cap` of its
    matches within a few thousand rows. A row read that way costs about SAMPLE_COST postings,
    so a branch samples when its expected read, cap × N / matches, costs less than the
    matches' postings (matches > ~30,000 at N = 1M, > ~9,500 at 100k). It reads at most
    SAMPLE_SPAN times that; when the newest rows hold fewer than SAMPLE_ENOUGH × cap matches
    (the statistics were wrong, or the terms seldom meet in one memory), the branch scans the
    index after all. The figures: docs/benchmarks.md, "Design decisions".
    Only for a search of a large project's live memories without filters (the index's own
    project and scope entries serve the rest), and for the terms of a branch: its matches
    are at most those of its rarest term."""
    if not base.project_wide:
        return None
    counts, table_rows = _term_rows(base.db), _table_rows(base.db)
    matches = min(counts.get(term, 0.0) for term in terms) * share
    project_rows = table_rows * share
    if matches <= COMMON_TERM_FACTOR * cap or matches**2 <= SAMPLE_COST * cap * project_rows:
        return None
    return math.ceil(SAMPLE_SPAN * cap * project_rows / matches)


SAMPLE_COST = 9
SAMPLE_SPAN = 2
SAMPLE_ENOUGH = 0.4


def _fetch_without_sequential_scans(using: str, sql: str, params: list[Any]) -> list[tuple]:
    """The rows of `sql`, planned without sequential scans of the table. A term branch is
    `... @@ term LIMIT cap`; the planner estimates a term's matches from the whole table's
    statistics, soft-deleted memories included, and when most of them are deleted a
    sequential scan "stopping after cap matches" reads far more than it expects once
    consolidation has merged most of a term's memories away (docs/benchmarks.md, "Keyword
    statements"). One round trip outside a transaction (`fetch_with_settings`)."""
    return fetch_with_settings(using, sql, params, {"enable_seqscan": "off"})


def _skipped_terms(lexemes: list[str], cap: int, using: str, share: float = 1.0) -> set[int]:
    """The terms whose own branch is not run: those the project (`share` of the table) is
    expected to hold more than COMMON_TERM_FACTOR × cap times (PostgreSQL's statistics of the
    whole table × share; a GIN scan builds and sorts a bitmap of every match before the
    branch's LIMIT applies, and the branch would read under 5% of them anyway). The least common
    of them keeps its branch (the rarer terms may match nothing), the others' memories still
    come in through it, the other branches and the all-terms one. A small tenant's terms are
    seldom common in it, whatever a large tenant holds: its branches, which read its own entries
    of the index, all run and its scores are exact."""
    if len(lexemes) < 2:
        return set()
    rows = {lexeme: count * share for lexeme, count in _term_rows(using).items()}
    common = {
        i for i, lexeme in enumerate(lexemes) if rows.get(lexeme, 0) > COMMON_TERM_FACTOR * cap
    }
    if common:
        common.discard(min(common, key=lambda i: rows[lexemes[i]]))
    return common


COMMON_TERM_FACTOR = 20
TERM_STATS_SECONDS = 300.0
_term_stats: dict[str, tuple[float, dict[str, float], float]] = {}


def _term_rows(using: str) -> dict[str, float]:
    """{lexeme: estimated memories containing it} from the planner's statistics of the
    search_vector column (its most common elements), refreshed every few minutes."""
    return _statistics(using)[1]


def _table_rows(using: str) -> float:
    """The memories table's estimated rows, as of the statistics `_term_rows` reads."""
    return _statistics(using)[2]


def _statistics(using: str) -> tuple[float, dict[str, float], float]:
    now = time.monotonic()
    cached = _term_stats.get(using)
    if cached is not None and now - cached[0] < TERM_STATS_SECONDS:
        return cached
    # pg_stats hides a table under row-level security from the runtime role: read as the owner
    db = connections[using]
    with as_owner(db), db.cursor() as cursor:
        if getattr(db, "is_citus", False):  # the shards' statistics (platformcore/db/citus.py)
            table_rows, rows = shard_statistics(
                cursor, "memories_memory", "search_vector", elements=True
            )
            _term_stats[using] = (now, rows, table_rows)
            return _term_stats[using]
        cursor.execute(
            """
            SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples
            FROM pg_stats s JOIN pg_class c ON c.oid = 'memories_memory'::regclass
            WHERE s.schemaname = current_schema() AND s.tablename = 'memories_memory'
              AND s.attname = 'search_vector'
            """
        )
        row = cursor.fetchone()
    rows: dict[str, float] = {}
    table_rows = 0.0
    if row is not None and row[0]:
        elements, freqs, table_rows = row  # freqs ends with min, max and null frequencies
        table_rows = max(float(table_rows), 0.0)
        pairs = zip(elements, freqs[: len(elements)], strict=True)
        rows = {lexeme: freq * table_rows for lexeme, freq in pairs}
    _term_stats[using] = (now, rows, table_rows)
    return _term_stats[using]


def keyword_search(*, project: Project, query: MemorySearchQuery) -> list[SearchHit]:
    # imported here: summaries imports this module (cycle)
    from memories.selectors.search.summaries import with_summaries

    base = compiled_search_base(project=project, query=query)
    ranked = keyword_ranked(
        base,
        query.text,
        limit=candidate_count(query),
        match=query.options.get("keyword_match", "any"),
        share=project_share(project=project),
        project_id=project.pk,
    )
    ranked = (
        with_summaries(
            project_id=project.pk,
            base=base,
            keyword=ranked,
            semantic=None,
            lexemes=query_lexemes(query.text, project_id=project.pk),
            vector=None,
            limit=candidate_count(query),
            min_similarity=0.0,
        )[0]
        or []
    )
    top = max((rank for _, rank in ranked), default=0.0) or 1.0
    return [
        SearchHit(
            memory=memory, score=rank / top, parts={"keyword": rank / top, "keyword_rank": rank}
        )
        for memory, rank in ranked
    ]
