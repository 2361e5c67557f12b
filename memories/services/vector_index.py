"""Deferred vector indexing: memories stored with `vector_pending` enter the HNSW graph.

A bulk write with `vector_index: deferred` skips the graph insert, most of what the write
costs PostgreSQL, and leaves it here (memories.selectors.pending_vectors explains how
searches rank those rows meanwhile). Clearing the flag makes a new row version, which
PostgreSQL inserts into the graph (the index's predicate now holds). Batches are short
transactions of their own, and `FOR UPDATE SKIP LOCKED` lets several runs (the job after
each deferred write, the hourly schedule, `manage.py index_vectors`) share the work.

The graph's health. HNSW graphs wear: a merged, deleted or re-embedded memory leaves a dead
element that VACUUM unlinks and repairs around, and after enough of that, parts of the graph
are poorly reachable: consolidation can take a graph's recall well below what a rebuild gives
(docs/search.md, "Graph health"; docs/benchmarks.md, "Design decisions"). No cheap
probe saw it: the graph's own memories as queries read 1.000 on both graphs. So the wear is
counted instead: the row versions the table lost to updates that were not HOT and to deletes
since the graph was built (PostgreSQL's statistics; the count at the build is kept in the
index's comment). `vector_index_maintain` rebuilds the graph concurrently once they reach
MEMORY_HNSW_REBUILD_CHURN (0.25) of the rows in it; the hourly job and
`manage.py vector_index_health` run it, `manage.py rebuild_vector_index` rebuilds at once.

A rebuild also rebuilds the graph's companion, the covering index of users' vectors
(USER_VECTORS), which the same row versions wear another way: each non-HOT update adds a
1.6 KB entry that VACUUM later removes without giving the pages back, until PostgreSQL prefers
reading a user's table rows to scanning it (docs/benchmarks.md, "Design decisions").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from memories.models import Memory
from memories.vector_storage import column_storage
from platformcore.db.rls import as_owner
from platformcore.lib.db_threads import beside
from platformcore.lib.errors import InvalidInput
from tenants.models import Project

INDEX = "memory_embedding_hnsw"
USER_VECTORS = "memory_project_user_vectors"  # (project, user_id) INCLUDE (..., embedding)

BATCH = 500

_INDEX_SQL = """
WITH picked AS (
    SELECT id FROM memories_memory
    WHERE deleted_at IS NULL AND vector_pending {project}
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
)
UPDATE memories_memory m SET vector_pending = false FROM picked WHERE m.id = picked.id
"""
_COUNT_SQL = """
SELECT count(*) FROM memories_memory WHERE deleted_at IS NULL AND vector_pending {project}
"""


@dataclass(frozen=True)
class IndexReport:
    indexed: int
    seconds: float
    pending: int  # left when the run ended (rows written meanwhile, or locked by another run)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def pending_vectors(*, project: Project | None = None) -> int:
    """Live memories whose vector waits for the graph (one project, or all)."""
    sql, params = _scoped(_COUNT_SQL, project)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        (count,) = cursor.fetchone()
    return int(count)


def index_pending_vectors(
    *,
    project: Project | None = None,
    batch: int = BATCH,
    workers: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> IndexReport:
    """Put the pending vectors (one project's, or all) into the HNSW graph, `batch` rows per
    transaction, until none is left that another run has not locked. `workers` connections
    (MEMORY_VECTOR_INDEX_WORKERS, 2) insert at once: an insert is one backend's CPU, and
    pgvector's graph takes concurrent inserts; inside a transaction, one."""
    sql, params = _scoped(_INDEX_SQL, project)
    params["batch"] = max(int(batch), 1)
    workers = settings.MEMORY_VECTOR_INDEX_WORKERS if workers is None else workers
    if workers < 1:
        raise InvalidInput("workers must be 1 or more", fields={"workers": ["1 or more"]})

    def drain() -> int:
        indexed = 0
        while True:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, params)
                done = max(cursor.rowcount, 0)
            if not done:
                return indexed
            indexed += done
            if progress is not None:
                progress(done)

    started = time.perf_counter()
    others = [beside(drain) for _ in range(workers - 1)]
    indexed = drain() + sum(other.result() for other in others)
    return IndexReport(
        indexed=indexed,
        seconds=round(time.perf_counter() - started, 3),
        pending=pending_vectors(project=project),
    )


def _scoped(template: str, project: Project | None) -> tuple[str, dict[str, Any]]:
    if project is None:
        return template.replace("{project}", ""), {}
    return template.replace("{project}", "AND project_id = %(project)s"), {"project": project.pk}


# --- the graph's health ----------------------------------------------------------------

# row versions superseded or removed by other than HOT updates: each was a graph element (or
# a pending row, which the indexing job's update counts too: a rebuild after a large deferred
# import is a better graph than the one the job grew, and costs a fraction of it)
_CHANGES_SQL = """
SELECT n_tup_upd - n_tup_hot_upd + n_tup_del FROM pg_stat_user_tables
WHERE relid = 'memories_memory'::regclass
"""
_GRAPH_ROWS_SQL = """
SELECT count(*) FROM memories_memory
WHERE deleted_at IS NULL AND NOT vector_pending AND embedding IS NOT NULL
"""
_LOCK = 0x6D656D68  # pg_try_advisory_lock key: one rebuild at a time


@dataclass(frozen=True)
class RebuildReport:
    m: int
    ef_construction: int
    seconds: float
    rebuilt: bool = True  # False: another rebuild held the lock
    user_vectors_seconds: float = 0.0  # of `seconds`: reindexing USER_VECTORS

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HealthReport:
    changes: int  # row versions lost to non-HOT updates and deletes since the graph's build
    graph_rows: int
    churn: float  # changes / graph_rows
    max_churn: float
    rebuilt: bool
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def vector_index_parameters() -> tuple[int, int]:
    """(m, ef_construction) of the graph as built now (the model's when it says nothing)."""
    declared = _model_index()
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [INDEX])
        row = cursor.fetchone()
    options = dict(item.split("=", 1) for item in (row[0] if row and row[0] else []))
    return int(options.get("m", declared.m)), int(
        options.get("ef_construction", declared.ef_construction)
    )


def vector_index_rebuild(
    *, m: int | None = None, ef_construction: int | None = None
) -> RebuildReport:
    """Build the graph anew beside the old one (CONCURRENTLY: reads and writes go on), then
    drop the old one and take its name. The predicate and operator class are the model's;
    m and ef_construction the ones given, else those the graph has now. The table's change
    count at the start is kept in the new index's comment: wear is counted from there. The
    covering index of users' vectors is then reindexed, also concurrently (see the module)."""
    current_m, current_ef = vector_index_parameters()
    m, ef = m or current_m, ef_construction or current_ef
    if not 2 <= m <= 100:
        raise InvalidInput("m must be between 2 and 100", fields={"m": ["between 2 and 100"]})
    if not max(4, 2 * m) <= ef <= 1000:
        message = "ef_construction must be between 2*m and 1000"
        raise InvalidInput(message, fields={"ef_construction": [message]})
    _path, args, kwargs = _model_index().deconstruct()
    kwargs.update(name=f"{INDEX}_new", m=m, ef_construction=ef)
    storage = column_storage(Memory._meta.db_table)
    if storage is not None:  # the column follows the embedding model (vector or halfvec)
        kwargs.update(opclasses=[storage.opclass])
    new = type(_model_index())(*args, **kwargs)
    started = time.perf_counter()
    # index DDL is the table owner's, not the runtime role's (platformcore/db/rls.py)
    with as_owner(connection), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK])
        if not cursor.fetchone()[0]:
            return RebuildReport(m=m, ef_construction=ef, seconds=0.0, rebuilt=False)
        try:
            changes = _table_changes()
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}_new")  # a failed run's
            with _build_memory(cursor), connection.schema_editor(atomic=False) as editor:
                editor.add_index(Memory, new, concurrently=True)
            comment = json.dumps({"changes_at_build": changes})
            cursor.execute(f"COMMENT ON INDEX {INDEX}_new IS %s", [comment])
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
            cursor.execute(f"ALTER INDEX {INDEX}_new RENAME TO {INDEX}")
            reindex_started = time.perf_counter()
            with _build_memory(cursor):
                cursor.execute(f"REINDEX INDEX CONCURRENTLY {USER_VECTORS}")
            reindexing = time.perf_counter() - reindex_started
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])
    return RebuildReport(
        m=m,
        ef_construction=ef,
        seconds=round(time.perf_counter() - started, 3),
        user_vectors_seconds=round(reindexing, 3),
    )


@contextmanager
def _build_memory(cursor: Any) -> Iterator[None]:
    """maintenance_work_mem raised to MEMORY_HNSW_BUILD_MEMORY_MB for this session while the
    graph is built (kept if the session has more already), then put back."""
    wanted = settings.MEMORY_HNSW_BUILD_MEMORY_MB
    cursor.execute("SELECT current_setting('maintenance_work_mem')")
    (previous,) = cursor.fetchone()
    cursor.execute("SELECT pg_size_bytes(%s) < %s", [previous, wanted * 1024 * 1024])
    raise_it = bool(wanted) and cursor.fetchone()[0]
    if raise_it:
        cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [f"{wanted}MB"])
    try:
        yield
    finally:
        if raise_it:
            cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [previous])


def vector_index_maintain(*, max_churn: float | None = None, rebuild: bool = True) -> HealthReport:
    """The graph's wear: row versions lost to non-HOT updates and deletes since its build,
    against the rows in it. At `max_churn` (MEMORY_HNSW_REBUILD_CHURN; 0 = never) and with
    `rebuild`, the graph is rebuilt concurrently with its own parameters."""
    limit = settings.MEMORY_HNSW_REBUILD_CHURN if max_churn is None else float(max_churn)
    if limit < 0:
        message = "max_churn must be 0 (never rebuild) or more"
        raise InvalidInput(message, fields={"max_churn": [message]})
    started = time.perf_counter()
    changes = max(_table_changes() - _changes_at_build(), 0)
    with connection.cursor() as cursor:
        cursor.execute(_GRAPH_ROWS_SQL)
        (rows,) = cursor.fetchone()
    churn = round(changes / rows, 4) if rows else 0.0
    rebuilt = bool(rebuild and limit and rows and churn >= limit) and vector_index_rebuild().rebuilt
    return HealthReport(
        changes=changes,
        graph_rows=int(rows),
        churn=churn,
        max_churn=limit,
        rebuilt=rebuilt,
        seconds=round(time.perf_counter() - started, 3),
    )


def _model_index() -> Any:
    return next(index for index in Memory._meta.indexes if index.name == INDEX)


def _table_changes() -> int:
    """The table's cumulative non-HOT updates and deletes, this session's included."""
    with connection.cursor() as cursor:
        if connection.pg_version >= 150000:  # this session's pending counts first
            cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(_CHANGES_SQL)
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _changes_at_build() -> int:
    """The count kept by the last rebuild; 0 for a graph built otherwise (a migration), and
    0 after a statistics reset left the table's count below it (wear counts from there)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT obj_description(%s::regclass, 'pg_class')", [INDEX])
        (comment,) = cursor.fetchone()
    try:
        at_build = int(json.loads(comment or "{}").get("changes_at_build", 0))
    except (ValueError, TypeError, AttributeError):
        return 0
    return at_build if at_build <= _table_changes() else 0
