"""Deferred vector indexing: memories stored with `vector_pending` enter the HNSW graph.

A bulk write with `vector_index: deferred` skips the graph insert, most of what the write
costs PostgreSQL, and leaves it here (memories.selectors.pending_vectors explains how
searches rank those rows meanwhile). Clearing the flag makes a new row version, which
PostgreSQL inserts into the graph (the index's predicate now holds). Batches are short
transactions of their own, and `FOR UPDATE SKIP LOCKED` lets several runs (the job after
each deferred write, the hourly schedule, `manage.py index_vectors`) share the work.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from django.db import connection, transaction

from tenants.models import Project

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
