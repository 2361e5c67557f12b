"""Deferred vector indexing: memories stored with `vector_pending` enter the HNSW graph.

A bulk write with `vector_index: deferred` skips the graph insert, most of what the write
costs PostgreSQL, and leaves it here (memories.selectors.pending_vectors explains how
searches rank those rows meanwhile). Clearing the flag makes a new row version, which
PostgreSQL inserts into the graph (the index's predicate now holds). Batches are short
transactions of their own, and `FOR UPDATE SKIP LOCKED` lets several runs (the job after
each deferred write, the hourly schedule, `manage.py index_vectors`) share the work.

The graph's health. HNSW graphs wear: a merged, deleted or re-embedded memory leaves a dead
element that VACUUM unlinks and repairs around, and after enough of that parts of the graph
are poorly reachable. A store of 105k live memories on which consolidation had merged 36k
away read recall@10 0.82 against exact search, 0.997 after a rebuild of 24 s
(docs/benchmarks.md). `vector_index_maintain` measures the recall on a sample of memories
(each one's vector as the query: its exact top 10 against the graph's) and rebuilds the
graph concurrently when it is below MEMORY_HNSW_MIN_RECALL; the hourly job and
`manage.py vector_index_health` run it, `manage.py rebuild_vector_index` rebuilds at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from memories.models import Memory
from memoryplatform.lib.errors import InvalidInput
from tenants.models import Project

INDEX = "memory_embedding_hnsw"

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
    progress: Callable[[int], object] | None = None,
) -> IndexReport:
    """Put the pending vectors (one project's, or all) into the HNSW graph, `batch` rows per
    transaction, until none is left that another run has not locked."""
    sql, params = _scoped(_INDEX_SQL, project)
    params["batch"] = max(int(batch), 1)
    started, indexed = time.perf_counter(), 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            done = max(cursor.rowcount, 0)
        if not done:
            break
        indexed += done
        if progress is not None:
            progress(done)
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

_SAMPLE_SQL = """
SELECT embedding::text FROM memories_memory TABLESAMPLE BERNOULLI (%(percent)s)
WHERE deleted_at IS NULL AND NOT vector_pending AND embedding IS NOT NULL
ORDER BY random() LIMIT %(sample)s
"""
# the graph's rows only, whichever project: the graph's quality, not a search's
_TOP_SQL = """
SELECT id FROM memories_memory
WHERE deleted_at IS NULL AND NOT vector_pending AND embedding IS NOT NULL
ORDER BY embedding <=> %(vector)s::vector LIMIT %(k)s
"""
_LOCK = 0x6D656D68  # pg_try_advisory_lock key: one rebuild at a time


@dataclass(frozen=True)
class RebuildReport:
    m: int
    ef_construction: int
    seconds: float
    rebuilt: bool = True  # False: another rebuild held the lock

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HealthReport:
    recall: float | None  # None: no memory in the graph to sample
    sampled: int
    min_recall: float
    rebuilt: bool
    recall_after: float | None
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
    m and ef_construction the ones given, else those the graph has now."""
    current_m, current_ef = vector_index_parameters()
    m, ef = m or current_m, ef_construction or current_ef
    if not 2 <= m <= 100:
        raise InvalidInput("m must be between 2 and 100", fields={"m": ["between 2 and 100"]})
    if not max(4, 2 * m) <= ef <= 1000:
        message = "ef_construction must be between 2*m and 1000"
        raise InvalidInput(message, fields={"ef_construction": [message]})
    _path, args, kwargs = _model_index().deconstruct()
    kwargs.update(name=f"{INDEX}_new", m=m, ef_construction=ef)
    new = type(_model_index())(*args, **kwargs)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK])
        if not cursor.fetchone()[0]:
            return RebuildReport(m=m, ef_construction=ef, seconds=0.0, rebuilt=False)
        try:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}_new")  # a failed run's
            with connection.schema_editor(atomic=False) as editor:
                editor.add_index(Memory, new, concurrently=True)
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
            cursor.execute(f"ALTER INDEX {INDEX}_new RENAME TO {INDEX}")
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])
    return RebuildReport(m=m, ef_construction=ef, seconds=round(time.perf_counter() - started, 3))


def vector_index_maintain(
    *,
    min_recall: float | None = None,
    sample: int | None = None,
    rebuild: bool = True,
    progress: Callable[[int], object] | None = None,
) -> HealthReport:
    """Measure the graph's recall@10 against exact search on a random sample of the memories
    in it (each one's vector as a query); below `min_recall` (MEMORY_HNSW_MIN_RECALL; 0 =
    never) and with `rebuild`, rebuild it with its own parameters and measure again on the
    same sample. `progress` is called with 1 after each query."""
    threshold = settings.MEMORY_HNSW_MIN_RECALL if min_recall is None else float(min_recall)
    if not 0.0 <= threshold <= 1.0:
        message = "min_recall must be between 0 and 1"
        raise InvalidInput(message, fields={"min_recall": [message]})
    size = settings.MEMORY_HNSW_RECALL_SAMPLE if sample is None else int(sample)
    if size < 1:
        raise InvalidInput("sample must be at least 1", fields={"sample": ["at least 1"]})
    started = time.perf_counter()
    vectors = _sample_vectors(size)
    recall = _recall(vectors, progress=progress)
    rebuilt, after = False, None
    if rebuild and recall is not None and recall < threshold:
        rebuilt = vector_index_rebuild().rebuilt
        after = _recall(vectors, progress=progress) if rebuilt else None
    return HealthReport(
        recall=recall,
        sampled=len(vectors),
        min_recall=threshold,
        rebuilt=rebuilt,
        recall_after=after,
        seconds=round(time.perf_counter() - started, 3),
    )


def _model_index() -> Any:
    return next(index for index in Memory._meta.indexes if index.name == INDEX)


def _sample_vectors(sample: int) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [Memory._meta.db_table])
        rows = max(float(cursor.fetchone()[0]), 1.0)  # -1 before the first ANALYZE
        percent = min(100.0, 100.0 * max(sample, 1) * 4 / rows)
        cursor.execute(_SAMPLE_SQL, {"percent": percent, "sample": max(sample, 1)})
        vectors = [vector for (vector,) in cursor.fetchall()]
        if len(vectors) < sample and percent < 100:  # statistics behind the table: all rows
            cursor.execute(_SAMPLE_SQL, {"percent": 100.0, "sample": sample})
            vectors = [vector for (vector,) in cursor.fetchall()]
    return vectors


def _recall(
    vectors: list[str], k: int = 10, progress: Callable[[int], object] | None = None
) -> float | None:
    """Mean overlap of the graph's top k and the exact top k (an index-less plan)."""
    if not vectors:
        return None
    found = 0.0
    for vector in vectors:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_TOP_SQL, {"vector": vector, "k": k})
            approx = {row[0] for row in cursor.fetchall()}
            cursor.execute("SET LOCAL enable_indexscan = off")
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            cursor.execute(_TOP_SQL, {"vector": vector, "k": k})
            exact = {row[0] for row in cursor.fetchall()}
        found += len(approx & exact) / max(len(exact), 1)
        if progress is not None:
            progress(1)
    return round(found / len(vectors), 4)
