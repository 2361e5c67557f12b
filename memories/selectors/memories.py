"""Memory reads: one memory, a filtered page, history, links."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.core.cache import cache
from django.db import connections
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet

from memories.models import Memory, MemoryHistory, MemoryLink
from memories.selectors.filters import (
    MemoryFilters,
    apply_filters,
    effective_confidence,
    with_namespace,
)
from memories.selectors.search_types import summary_fits
from platformcore.db.citus import shard_statistics
from platformcore.db.rls import as_owner
from platformcore.lib.errors import NotFound, parse_uuid
from tenants.models import Project
from tenants.namespaces import SHARED_AGENT, current_namespace

NOT_LOADED = ("embedding", "search_vector", "summary_embedding")  # what reads leave aside


def memory_queryset(
    *, project: Project, as_array: bool = False, namespaced: bool = True
) -> QuerySet[Memory]:
    """The one place reads start from: the caller's project, live memories only, within the
    calling code's agent namespace (tenants/namespaces.py; `namespaced` false: the caller's
    filters carry it, as a search's do). `as_array`: see `MemoryQuerySet.for_project`."""
    queryset = Memory.objects.for_project(project, as_array=as_array, namespaced=namespaced)
    return (
        queryset.alive()
        .defer(*NOT_LOADED)
        .annotate(has_vector=ExpressionWrapper(Q(embedding__isnull=False), BooleanField()))
    )


@functools.cache
def _by_id_statement(
    using: str, namespaced: bool = False
) -> tuple[tuple[str, ...], str, tuple[tuple[int, Any, list], ...]]:
    """(the attnames loaded, the SQL, (column index, column, converters) for the fields whose
    database values need converting) of `memories_by_id`: memory_queryset's columns and
    conditions, written out once per process and database."""
    connection = connections[using]
    table = Memory._meta.db_table
    fields = [f for f in Memory._meta.concrete_fields if f.name not in NOT_LOADED]
    columns = ", ".join(f'"{table}"."{f.column}"' for f in fields)
    sql = (
        f'SELECT {columns}, ("{table}"."embedding" IS NOT NULL) FROM "{table}" '
        f'WHERE "{table}"."project_id" = %s AND "{table}"."deleted_at" IS NULL '
        f'AND "{table}"."id" = ANY(%s::uuid[])'
    )
    if namespaced:  # the agent's own memories and the shared pool's
        sql += f' AND ("{table}"."agent_id" = ANY(%s) OR "{table}"."agent_id" IS NULL)'
    converters = []
    for index, field in enumerate(fields):  # as Django's compiler does (JSON arrives as text)
        column = field.get_col(table)
        found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if found:
            converters.append((index, column, found))
    return tuple(f.attname for f in fields), sql, tuple(converters)


def memories_by_id(
    *, project: Project, ids: Iterable[UUID], using: str = "default"
) -> dict[UUID, Memory]:
    """{id: memory} for the project's live memories among `ids`: the rows memory_queryset
    would load (`has_vector` set, the vector and tsvector deferred), by one statement written
    once per process. Building and compiling `memory_queryset().filter(pk__in=...)` cost
    more than running it, most of it in Django's query compiler."""
    ids = list(ids)
    if not ids:
        return {}
    namespace = current_namespace()
    attnames, sql, converters = _by_id_statement(using, namespace is not None)
    params: list[Any] = [project.pk, ids]
    if namespace is not None:
        params.append([namespace.agent, SHARED_AGENT])
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    found = {}
    for *values, has_vector in rows:
        for index, column, functions in converters:
            for convert in functions:
                values[index] = convert(values[index], column, connection)
        memory = Memory.from_db(using, attnames, values)
        memory.has_vector = has_vector  # type: ignore[attr-defined]
        found[memory.pk] = memory
    return found


COUNT_TTL = 60  # seconds per 10,000 memories, up to COUNT_TTL_MAX
COUNT_TTL_MAX = 600
TABLE_STATS_SECONDS = 300.0
_table_stats: dict[str, tuple[float, float, dict[int, float]]] = {}


def _memories_table_stats(using: str) -> tuple[float, dict[int, float]]:
    """(the memories table's estimated rows, {project id: share of the rows} for the projects
    PostgreSQL's statistics list as most common), refreshed every few minutes."""
    now = time.monotonic()
    cached = _table_stats.get(using)
    if cached is None or now - cached[0] >= TABLE_STATS_SECONDS:
        # pg_stats hides a table under row-level security from the runtime role: the owner's
        db = connections[using]
        with as_owner(db), db.cursor() as cursor:
            if getattr(db, "is_citus", False):  # the shards' (platformcore/db/citus.py)
                rows, counts = shard_statistics(cursor, "memories_memory", "project_id")
                shares = {int(value): n / rows for value, n in counts.items()} if rows else {}
                cached = _table_stats[using] = (now, rows, shares)
                return cached[1], cached[2]
            cursor.execute(
                """
                SELECT c.reltuples, s.most_common_vals::text::bigint[], s.most_common_freqs
                FROM pg_class c LEFT JOIN pg_stats s
                  ON s.schemaname = current_schema() AND s.tablename = 'memories_memory'
                 AND s.attname = 'project_id'
                WHERE c.oid = 'memories_memory'::regclass
                """
            )
            rows, projects, freqs = cursor.fetchone()
        shares = dict(zip(projects or [], freqs or [], strict=True))
        cached = _table_stats[using] = (now, max(float(rows), 0.0), shares)
    return cached[1], cached[2]


def project_memory_count(*, project: Project, using: str = "default") -> int:
    """How many memories the project holds, live and soft-deleted alike, for weights and plan
    choices (not for display). A project PostgreSQL's statistics list among the table's most
    common values is estimated from them (counting a project of 1M memories would take ~0.1 s);
    another is counted, being small (a few ms), and the count remembered COUNT_TTL seconds
    per 10,000 memories, up to 10 minutes."""
    rows, shares = _memories_table_stats(using)
    if project.pk in shares:
        return int(shares[project.pk] * rows)
    key = f"memories:count:{project.pk}"
    total = cache.get(key)
    if total is None:
        total = Memory.objects.using(using).filter(project=project).count()
        cache.set(key, total, min(COUNT_TTL * max(1, total // 10_000), COUNT_TTL_MAX))
    return int(total)


def project_share(*, project: Project, using: str = "default") -> float:
    """The project's share of the memories table (`project_memory_count` over the table's
    estimated rows); 1.0 while the statistics are missing or older than the project."""
    rows, _ = _memories_table_stats(using)
    count = project_memory_count(project=project, using=using)
    return count / rows if rows >= max(count, 1) else 1.0


def memory_get(*, project: Project, memory_id: UUID | str) -> Memory:
    pk = parse_uuid(memory_id, what="memory")
    memory = (
        memory_queryset(project=project)
        .annotate(effective_confidence=effective_confidence())
        .filter(pk=pk)
        .first()
    )
    if memory is None:
        raise NotFound("memory not found")
    return memory


@dataclass(frozen=True)
class Page:
    results: list[Memory]
    count: int
    limit: int
    offset: int


def memory_list(
    *,
    project: Project,
    filters: MemoryFilters,
    limit: int,
    offset: int,
    include_deleted: bool = False,
) -> Page:
    """A page of the project's memories, newest first; `include_deleted` adds the deleted and
    pruned ones (an administrator's view: the entry points check who asks)."""
    base = memory_queryset(project=project, namespaced=False)
    if include_deleted:
        base = (
            Memory.objects.for_project(project, namespaced=False)
            .defer(*NOT_LOADED)
            .annotate(has_vector=ExpressionWrapper(Q(embedding__isnull=False), BooleanField()))
        )
    filters = with_namespace(filters)
    queryset = apply_filters(base, filters, project=project).order_by("-created_at", "-id")
    return Page(
        results=list(queryset[offset : offset + limit]),
        count=queryset.count(),
        limit=limit,
        offset=offset,
    )


def memory_history(*, project: Project, memory_id: UUID | str) -> list[MemoryHistory]:
    pk = parse_uuid(memory_id, what="memory")
    # The audit trail outlives a soft delete: it is how one learns what was deleted and by whom.
    if not Memory.objects.for_project(project).filter(pk=pk).exists():
        raise NotFound("memory not found")
    return list(
        MemoryHistory.objects.filter(project=project, memory_id=pk).order_by("created_at", "id")
    )


def memory_links(*, project: Project, memory_id: UUID | str) -> list[MemoryLink]:
    """Links in and out of a live memory whose other end is live too."""
    memory = memory_get(project=project, memory_id=memory_id)
    return list(
        MemoryLink.objects.filter(project=project)
        .filter(Q(from_memory=memory) | Q(to_memory=memory))
        .filter(from_memory__deleted_at__isnull=True, to_memory__deleted_at__isnull=True)
        .order_by("created_at", "id")
    )


def memories_by_importance(
    *, project: Project, filters: MemoryFilters, token_budget: int, limit: int = 100
) -> list[Memory]:
    """The memories matching `filters`, most important first and then newest, as many as fit
    in `token_budget` tokens (at least one): recall by filters alone, with no text to rank
    by (Memento's `recall` by topic, type, keywords or time)."""
    base = memory_queryset(project=project, namespaced=False)
    queryset = apply_filters(base, with_namespace(filters), project=project)
    chosen, used = [], 0
    for memory in queryset.order_by("-importance", "-created_at", "-id")[:limit]:
        cost = memory.token_count
        if chosen and used + cost > token_budget:
            if not summary_fits(memory, token_budget - used):
                break
            memory.summarized, cost = True, memory.summary_tokens  # type: ignore[attr-defined]
        chosen.append(memory)
        used += cost
    return chosen
