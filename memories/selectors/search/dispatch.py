"""The search dispatcher: validation, mode registry, decay-aware ranking, paging, budgets."""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from django.conf import settings
from django.db import router
from django.db.models import FloatField, QuerySet, Value
from django.utils.module_loading import import_string

from memories.models import Memory
from memories.selectors.filters import (
    MemoryFilters,
    apply_filters,
    effective_confidence,
    with_namespace,
)
from memories.selectors.memories import memories_by_id, memory_queryset, project_share
from memories.selectors.quality import rank_factor
from memories.selectors.search import rerank
from memories.selectors.search_types import Candidate, SearchHit, SearchQuery, summary_fits
from platformcore.lib import stages
from platformcore.lib.errors import InvalidInput
from platformcore.metrics import timed_search
from tenants.models import Project

logger = logging.getLogger(__name__)

Mode = Callable[..., list[SearchHit]]
Boost = Callable[..., dict[Any, float]]

# The modes by name and the hybrid boosts. This app's own are import strings, imported on
# first use (they import this module); the apps above add theirs with `register_mode` and
# `register_boost` in their AppConfig.ready() (the knowledge graph: `graph`, `graph_boost`).
MODES: dict[str, str | Mode] = {
    "keyword": "memories.selectors.search.keyword.keyword_search",
    "semantic": "memories.selectors.search.semantic.semantic_search",
    "hybrid": "memories.selectors.search.hybrid.hybrid_search",
}
HYBRID_BOOSTS: list[str | Boost] = [
    "memories.selectors.search.dates.date_boost",
    "memories.selectors.layers.session_boost",  # the caller's run's recent short-term memories
]


def register_mode(name: str, mode: Mode) -> None:
    """Offer `mode=name`: `mode(*, project, query)` returns its hits (see the package doc)."""
    MODES[name] = mode


def register_boost(boost: Boost) -> None:
    """Add `boost` to hybrid search's boosts (see the package doc), once."""
    if boost not in HYBRID_BOOSTS:
        HYBRID_BOOSTS.append(boost)


def _loaded(target: str | Callable[..., Any]) -> Any:
    return import_string(target) if isinstance(target, str) else target


# What ranking reads of a candidate (plus effective_confidence): modes load candidates as
# `Candidate`s of these columns and the dispatcher loads whole rows for the returned page alone.
# The run and the time place a hit among what was said around it (search/neighbours.py).
CANDIDATE_FIELDS = ("id", "created_at", "token_count", "utility_score", "run_id", "occurred_at")


@functools.cache
def candidate_columns() -> tuple[str, ...]:
    """CANDIDATE_FIELDS in the model's field order (the order the modes' statements select
    them in; `candidate` reads a row of them)."""
    return tuple(f.attname for f in Memory._meta.concrete_fields if f.attname in CANDIDATE_FIELDS)


def candidate(row: Any, effective_confidence: float | None = None) -> Candidate:
    """The Candidate of a statement row starting with candidate_columns()."""
    pk, created_at, token_count, utility, run_id, occurred = (
        row[i] for i in _candidate_positions()
    )
    found = Candidate(pk, created_at, token_count, utility, run_id, occurred)
    if effective_confidence is not None:
        found.effective_confidence = effective_confidence
    return found


@functools.cache
def _candidate_positions() -> tuple[int, ...]:
    columns = candidate_columns()
    return tuple(columns.index(name) for name in CANDIDATE_FIELDS)


MAX_QUERY_LENGTH = 2000
MAX_OFFSET = 1000  # deep pages would need ever larger candidate pools; refuse them plainly


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]
    mode: str
    limit: int
    offset: int
    token_budget: int | None
    tokens: int  # sum of the returned memories' token counts
    budget_exhausted: bool  # true when the budget, not the limit, ended the page


# A project holding at most this share of the memories table is named in the form the keyword
# index can use (see search_queryset).
SMALL_PROJECT_SHARE = 0.5


def search_queryset(*, project: Project, query: SearchQuery) -> QuerySet[Memory]:
    """The project's live memories matching the query's filters, with effective_confidence.

    A project holding at most SMALL_PROJECT_SHARE of the table is named in the form the
    keyword index can use (`MemoryQuerySet.for_project`), and the planner then uses the
    project's entries where they are short: a smaller tenant's keyword search beside a large
    one gets faster. For a project holding most of the table the same
    form is slower. The crossover lies between; half the table errs towards the form whose
    misses cost less (docs/benchmarks.md, "Keyword statements")."""
    small = project_share(project=project) <= SMALL_PROJECT_SHARE
    # the agent namespace travels in the filters (memory_search puts it there): this may
    # run on a second thread
    memories = memory_queryset(project=project, as_array=small, namespaced=False)
    return apply_filters(memories, query.filters, project=project)


@dataclass(frozen=True)
class SearchBase:
    """A search's filtered memories, compiled once for every statement a mode writes around
    them: `sql` selects BASE_ALIASES (the candidate columns, then the tsvector, the vector,
    the pending-vector flag and effective_confidence, NULL when `confidence` is false).

    Keyword and semantic statements select from `(sql) AS b(<aliases>)`; PostgreSQL pulls
    such a subquery up into the statement and drops the columns it does not read, so each
    plan is the one a subquery of only its own columns gets (the GIN or HNSW scan with the
    filters). Compiling the queryset once instead of once per statement (four in a hybrid
    search: the keyword branches, the keyword rows, the vectors in the graph and the pending
    ones) saves Django's compiler most of a search's Python time."""

    sql: str
    params: tuple[Any, ...]
    confidence: bool
    db: str
    build: Callable[[], QuerySet[Memory]]  # the queryset, for statements the ORM writes
    # the filters are conditions on plain columns (scope, types, states, dates...), none that
    # only a GIN index or a subquery answers (tags, metadata, entities): see semantic.py
    plain_filters: bool = False
    # no filters, and a project named by `project_id =` (over SMALL_PROJECT_SHARE of the
    # table): the base is the project's live memories, newest first along an index (keyword.py)
    project_wide: bool = False

    def queryset(self) -> QuerySet[Memory]:
        return self.build()

    def source(self, alias: str) -> str:
        """`(sql) AS alias(<aliases>)`, for a FROM or JOIN; its parameters are `params`."""
        return f"({self.sql}) AS {alias}({', '.join(base_aliases())})"


@functools.cache
def base_aliases() -> tuple[str, ...]:
    return (*candidate_columns(), "sv", "emb", "pending", "ec")


def search_base(queryset: QuerySet[Memory] | SearchBase) -> SearchBase:
    """`queryset` (search_queryset's, or any queryset of memories) as a SearchBase."""
    if isinstance(queryset, SearchBase):
        return queryset
    confidence = "effective_confidence" in queryset.query.annotations
    selected = queryset.order_by()
    if not confidence:
        selected = selected.annotate(_no_confidence=Value(None, output_field=FloatField()))
    columns = (*candidate_columns(), "search_vector", "embedding", "vector_pending")
    last = "effective_confidence" if confidence else "_no_confidence"
    sql, params = selected.values_list(*columns, last).query.sql_with_params()
    return SearchBase(sql, tuple(params), confidence, queryset.db, lambda: queryset)


SEARCH_BASES = 512  # compiled bases remembered per process, by filter set
_bases: OrderedDict[tuple[Any, ...], SearchBase] = OrderedDict()
_bases_lock = threading.Lock()


def compiled_search_base(*, project: Project, query: SearchQuery) -> SearchBase:
    """`search_base(search_queryset(...))`, remembered per project and filter set: agents
    search again and again within the same scope (a user, a run), and building the filtered
    queryset and compiling it is most of a search's Python time. Filters naming
    entities by name are compiled every time: the names resolve to entity ids that change
    as the graph grows."""
    build = functools.partial(search_queryset, project=project, query=query)
    key = _base_key(project, query)
    if key is None:
        return replace(search_base(build()), plain_filters=_plain(query.filters))
    with _bases_lock:
        cached = _bases.get(key)
        if cached is not None:
            _bases.move_to_end(key)
    if cached is None:
        _, small, *_ = key
        wide = not small and query.filters == MemoryFilters()
        cached = replace(
            search_base(build()), plain_filters=_plain(query.filters), project_wide=wide
        )
        with _bases_lock:
            _bases[key] = cached
            while len(_bases) > SEARCH_BASES:
                _bases.popitem(last=False)
    # the SQL fits any copy of the database; which copy reads it is decided per request
    return replace(cached, build=build, db=router.db_for_read(Memory))


def _plain(filters: MemoryFilters) -> bool:
    return not (filters.tags or filters.expression or filters.entities or filters.entity_ids)


def _base_key(project: Project, query: SearchQuery) -> tuple[Any, ...] | None:
    """What the compiled base depends on, or None when it also depends on the database."""
    filters = query.filters
    described = json.dumps(asdict(filters), sort_keys=True, default=repr)
    if filters.entities or (filters.expression is not None and '"entity"' in described):
        return None
    small = project_share(project=project) <= SMALL_PROJECT_SHARE
    return (project.pk, small, settings.MEMORY_DECAY_HALF_LIFE_DAYS, described)


def candidate_count(query: SearchQuery) -> int:
    """How many hits a mode should return: enough to re-rank by decay and page."""
    return max(query.offset + query.limit, settings.MEMORY_SEARCH_CANDIDATES)


@timed_search
def memory_search(*, project: Project, query: SearchQuery) -> SearchResult:
    validate_query(query)
    query = without_own_name(in_namespace(query))
    mode = _resolve(query.mode)
    hits = mode(project=project, query=query)
    with stages.stage("decay"):
        hits = _rank_by_confidence(hits)
    if rerank.wanted(query):
        with stages.stage("rerank"):
            hits = rerank.reranked(query, hits)
    with stages.stage("rows"):
        page = _load_rows(project, hits[query.offset : query.offset + query.limit])
    page, tokens, exhausted = _within_budget(page, query.token_budget)
    return SearchResult(
        hits=page,
        mode=query.mode,
        limit=query.limit,
        offset=query.offset,
        token_budget=query.token_budget,
        tokens=tokens,
        budget_exhausted=exhausted,
    )


def in_namespace(query: SearchQuery) -> SearchQuery:
    """The query with the calling code's agent namespace in its filters (tenants/namespaces.py)."""
    filters = with_namespace(query.filters)
    return query if filters is query.filters else replace(query, filters=filters)


def without_own_name(query: SearchQuery) -> SearchQuery:
    """The question without the name of the user it is scoped to: within alice's memories,
    "alice" tells none of them apart, and it pulled memories that name her ("Alice decided
    ...") above the one asked about ("what theme does alice like" -> "User prefers dark
    mode"). A question that is nothing but the name stays as it is."""
    user = query.filters.user_id
    if not user or len(user) < 2:
        return query
    pattern = _own_name_pattern(user)
    text = " ".join(pattern.sub(" ", query.text).split())
    if not text.strip(" ?!.,;:") or text == query.text:
        return query
    return replace(query, text=text)


@functools.lru_cache(maxsize=1024)
def _own_name_pattern(user: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(user)}(?:'s|s')?(?!\w)", re.IGNORECASE)


def validate_query(query: SearchQuery) -> None:
    errors: dict[str, list[str]] = {}
    if not isinstance(query.text, str) or not query.text.strip():
        errors["query"] = ["must be a non-empty string"]
    elif len(query.text) > MAX_QUERY_LENGTH:
        errors["query"] = [f"at most {MAX_QUERY_LENGTH} characters"]
    if query.mode not in MODES:
        errors["mode"] = [f"one of {', '.join(MODES)}"]
    if not 1 <= query.limit <= settings.MEMORY_MAX_PAGE_SIZE:
        errors["limit"] = [f"between 1 and {settings.MEMORY_MAX_PAGE_SIZE}"]
    if not 0 <= query.offset <= MAX_OFFSET:
        errors["offset"] = [f"between 0 and {MAX_OFFSET}"]
    if query.min_similarity is not None and not 0.0 <= query.min_similarity <= 1.0:
        errors["min_similarity"] = ["must be within [0, 1]"]
    if query.token_budget is not None and query.token_budget < 1:
        errors["token_budget"] = ["must be at least 1"]
    if errors:
        raise InvalidInput(f"Invalid input: {', '.join(sorted(errors))}", fields=errors)
    query.filters.as_q()  # a bad filter expression is a 400 before any search runs


def _resolve(name: str) -> Mode:
    try:
        return _loaded(MODES[name])
    except ImportError as exc:
        message = f"{name} search is unavailable on this server"
        raise InvalidInput(message, fields={"mode": [message]}) from exc


def resolve_boosts() -> list[Boost]:
    boosts = []
    for boost in HYBRID_BOOSTS:
        try:
            boosts.append(_loaded(boost))
        except ImportError:
            logger.debug("hybrid boost %s is not installed", boost)
    return boosts


def _rank_by_confidence(hits: list[SearchHit]) -> list[SearchHit]:
    """final score = relevance × effective confidence × the utility factor (1 for a memory
    of neutral or unassessed utility; `memories.selectors.quality.rank_factor`)."""
    missing = [hit.memory.pk for hit in hits if not hasattr(hit.memory, "effective_confidence")]
    if missing:  # a mode that did not start from search_queryset: ask PostgreSQL once
        values = dict(
            Memory.objects.filter(pk__in=missing)
            .annotate(ec=effective_confidence())
            .values_list("pk", "ec")
        )
        for hit in hits:
            if hit.memory.pk in values:
                hit.memory.effective_confidence = values[hit.memory.pk]
    for hit in hits:
        confidence = float(hit.memory.effective_confidence)
        relevance = hit.score
        utility = getattr(hit.memory, "utility_score", None)
        hit.parts = {**hit.parts, "relevance": relevance, "confidence": confidence}
        if utility is not None:
            hit.parts["utility"] = float(utility)
        hit.score = relevance * confidence * rank_factor(utility)
    # Ties (equal relevance, equal confidence) go to the newer memory, then to the id.
    hits.sort(key=lambda hit: str(hit.memory.pk))
    hits.sort(key=lambda hit: hit.memory.created_at, reverse=True)
    return sorted(hits, key=lambda hit: -hit.score)


def _load_rows(project: Project, hits: list[SearchHit]) -> list[SearchHit]:
    """The hits with whole rows for those whose mode returned Candidates, in one query; a
    memory deleted since it was ranked is left out."""
    partial = [hit for hit in hits if isinstance(hit.memory, Candidate)]
    if not partial:
        return hits
    ids = [hit.memory.pk for hit in partial]
    by_id = memories_by_id(project=project, ids=ids, using=router.db_for_read(Memory))
    loaded = []
    for hit in hits:
        if isinstance(hit.memory, Candidate):
            row = by_id.get(hit.memory.pk)
            if row is None:
                continue
            row.effective_confidence = hit.memory.effective_confidence  # type: ignore[attr-defined]
            hit.memory = row
        loaded.append(hit)
    return loaded


def _within_budget(hits: list[SearchHit], budget: int | None) -> tuple[list[SearchHit], int, bool]:
    """Accumulate in rank order; a memory whose full text would exceed the budget is sent as
    its summary when that fits (`summarized`), else the page stops before it."""
    kept: list[SearchHit] = []
    total = 0
    for hit in hits:
        if budget is not None and total + hit.memory.token_count > budget:
            if not summary_fits(hit.memory, budget - total):
                return kept, total, True
            hit.summarized = True
        kept.append(hit)
        total += hit.tokens
    return kept, total, False
