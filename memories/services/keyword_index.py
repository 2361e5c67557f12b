"""The keyword (GIN) indexes' bloat, and their concurrent rebuild once it is high.

A GIN index does not shrink: VACUUM frees the entries of deleted and updated rows and leaves
their pages in the index, and the entries of new rows go wherever they fit. A store that
merges, deletes and re-writes memories (consolidation, decay, pruning) ends with keyword
indexes much larger than their live entries, and every keyword search reads more pages.

PostgreSQL has no exact bloat measure for GIN (pgstattuple's `pgstatindex` reads B-trees
only, `pgstatginindex` only the pending list, which our indexes do not keep), so it is
estimated the way the vector index's wear is counted (vector_index.py): each index's size per
indexed row right after a build is kept in the index's comment, and bloat is the share of its
size now beyond what its rows would take at that density:

    bloat = 1 - bytes_per_row_at_build x rows_now / bytes_now

The row count is PostgreSQL's own estimate for the index (`pg_class.reltuples`, kept by
VACUUM and ANALYZE; no scan). An index without a recorded build gets one now (its bloat then
reads 0: it is measured from here). Once bloat reaches MEMORY_KEYWORD_INDEX_MAX_BLOAT (0.3),
`keyword_indexes_maintain` runs `REINDEX INDEX CONCURRENTLY` (reads and writes go on) and
records the new density. Indexes under MIN_BYTES are left alone: a few pages' bloat costs
nothing. The hourly job and `manage.py keyword_index_health` run it; each index's bloat is a
metric (`memory_keyword_index_bloat_ratio`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from platformcore.db.rls import as_owner
from platformcore.lib.errors import InvalidInput
from platformcore.metrics import keyword_index_measured, maintenance_items

MIN_BYTES = 1024 * 1024
_LOCK = 0x6D656D67  # pg_try_advisory_lock key: one reindex run at a time

_GIN_SQL = """
SELECT i.relname, t.relname, pg_relation_size(i.oid), i.reltuples,
       obj_description(i.oid, 'pg_class')
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_am a ON a.oid = i.relam
JOIN pg_namespace n ON n.oid = i.relnamespace
WHERE a.amname = 'gin' AND n.nspname = current_schema() AND x.indisvalid
ORDER BY i.relname
"""


@dataclass(frozen=True)
class IndexBloat:
    index: str
    table: str
    size_bytes: int
    rows: int
    bloat: float  # estimated share of the index that is bloat
    reindexed: bool = False
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def keyword_indexes_bloat() -> list[IndexBloat]:
    """Every GIN index of the schema with its estimated bloat (recording the density of
    those measured for the first time)."""
    with as_owner(connection), connection.cursor() as cursor:
        cursor.execute(_GIN_SQL)
        rows = cursor.fetchall()
        found = []
        for index, table, size, reltuples, comment in rows:
            rows_now = max(int(reltuples), 0)
            density = _recorded_density(comment)
            if density is None and rows_now:
                _record(cursor, index, size, rows_now)
            bloat = _bloat(size, rows_now, density)
            found.append(IndexBloat(index, table, int(size), rows_now, bloat))
    return found


def _recorded_density(comment: str | None) -> float | None:
    try:
        value = json.loads(comment or "{}").get("bytes_per_row_at_build")
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _bloat(size: int, rows: int, density: float | None) -> float:
    if density is None or not size or rows <= 0:
        return 0.0
    return round(max(0.0, 1.0 - density * rows / size), 4)


def _record(cursor: Any, index: str, size: int, rows: int) -> None:
    comment = json.dumps({"bytes_per_row_at_build": round(size / rows, 3)})
    cursor.execute(f"COMMENT ON INDEX {connection.ops.quote_name(index)} IS %s", [comment])


def keyword_indexes_maintain(
    *, max_bloat: float | None = None, min_bytes: int = MIN_BYTES, reindex: bool = True
) -> list[IndexBloat]:
    """Measure every GIN index; reindex concurrently those whose bloat reaches `max_bloat`
    (MEMORY_KEYWORD_INDEX_MAX_BLOAT; 0 = never) and whose size reaches `min_bytes`. Runs
    outside a transaction (REINDEX CONCURRENTLY cannot run inside one)."""
    limit = settings.MEMORY_KEYWORD_INDEX_MAX_BLOAT if max_bloat is None else float(max_bloat)
    if not 0 <= limit <= 1:
        message = "max_bloat must be between 0 (never reindex) and 1"
        raise InvalidInput(message, fields={"max_bloat": [message]})
    report = []
    for measured in keyword_indexes_bloat():
        due = reindex and limit and measured.bloat >= limit and measured.size_bytes >= min_bytes
        report.append(_reindexed(measured) if due else measured)
    for item in report:
        keyword_index_measured(item.index, item.bloat)
        maintenance_items("keyword_reindex", item.index, int(item.reindexed))
    return report


def _reindexed(measured: IndexBloat) -> IndexBloat:
    if connection.in_atomic_block:
        raise InvalidInput("REINDEX CONCURRENTLY cannot run inside a transaction")
    name = connection.ops.quote_name(measured.index)
    started = time.perf_counter()
    with as_owner(connection), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK])
        if not cursor.fetchone()[0]:
            return measured
        try:
            cursor.execute(f"REINDEX INDEX CONCURRENTLY {name}")
            cursor.execute(
                "SELECT pg_relation_size(%s::regclass), reltuples FROM pg_class WHERE relname = %s",
                [measured.index, measured.index],
            )
            size, reltuples = cursor.fetchone()
            rows = max(int(reltuples), 0) or measured.rows
            if rows:
                _record(cursor, measured.index, size, rows)
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])
    return IndexBloat(
        index=measured.index,
        table=measured.table,
        size_bytes=int(size),
        rows=rows,
        bloat=0.0,
        reindexed=True,
        seconds=round(time.perf_counter() - started, 3),
    )
