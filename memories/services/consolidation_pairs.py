"""Candidate pairs for consolidation: live memories of one project and one scope at least
`min_similarity` alike, found inside PostgreSQL (never an all-pairs loop in Python).

Two plans, chosen per scope from an estimate of their cost (constants measured on the
benchmark machine; they only move the crossover; the exact plan is complete, the probes
nearly so, see below):

- **exact**: every pair of the scope, one hash join on the scope columns. A memory costs one
  distance per other memory of its scope (~0.9 µs each), and nothing can be missed.
- **probes**: one HNSW k-NN probe per memory, the `CANDIDATES` nearest rows *of the project*.
  The project filter sits inside the index scan, and pgvector's iterative scan
  (`hnsw.iterative_scan = relaxed_order`) keeps walking the graph until that many rows of the
  project are found, so other tenants' vectors can never crowd a project's own neighbours out.
  A probe costs ~0.9 ms in a 12,500-row table, ~2.4 ms in a 125,000-row one, plus ~6 µs per
  other-project row it has to step over (the smaller the project's share, the more). Scope is
  checked on those rows, so in a large scope a near-duplicate is missed only if `CANDIDATES`
  memories of *the same project* are closer to it.

A scope takes the exact plan up to ~1,000 memories in a 12,500-row table, ~2,700 in a
125,000-row one (~6,800 in a million-row one), larger scopes the probes. With `since`, only
memories changed since then look for partners (`memory_project_updated` finds them), against
every memory of their scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import connection, transaction

from memories.selectors.pending_vectors import graph_and_pending
from tenants.models import Project

CANDIDATES = 40
EF_SEARCH = 100
MAX_SCAN_TUPLES = 20_000  # pgvector's default bound on one iterative scan
# Measured with benchmarks.intelligence (--compare-plans): one pair of the exact plan costs
# 0.93 µs at 10k and at 100k memories; a probe 0.87 ms in a 12,500-row table and 2.4 ms in a
# 125,000-row one (a bigger graph, fewer cache hits): ~ table^0.45.
PAIR_COST_US = 0.93
PROBE_COST_US = 870.0  # in a table of PROBE_TABLE_ROWS rows
PROBE_TABLE_ROWS = 12_500
PROBE_GROWTH = 0.45
SKIP_COST_US = 6.0  # per other-project row an iterative scan steps over

Pair = tuple[UUID, UUID, float]

_SCOPES_SQL = """
SELECT user_id, agent_id, run_id, count(*), count(*) FILTER (WHERE {changed})
FROM memories_memory a
WHERE a.project_id = %(project)s AND a.deleted_at IS NULL AND a.embedding IS NOT NULL
GROUP BY 1, 2, 3
"""

# The memories that look for partners: those of the given scopes (matched on COALESCEd
# columns, which a hash join can use; the exact IS NOT DISTINCT FROM check follows).
_SEEKERS = """
FROM unnest(%(users)s::text[], %(agents)s::text[], %(runs)s::text[]) AS s(u, g, r)
JOIN memories_memory a
  ON COALESCE(a.user_id, '') = s.u AND COALESCE(a.agent_id, '') = s.g
 AND COALESCE(a.run_id, '') = s.r
"""
_SEEKER_FILTER = """
a.project_id = %(project)s AND a.deleted_at IS NULL AND a.embedding IS NOT NULL AND {changed}
"""

_EXACT_SQL = f"""
SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding)
{_SEEKERS}
JOIN memories_memory b
  ON COALESCE(b.user_id, '') = COALESCE(a.user_id, '')
 AND COALESCE(b.agent_id, '') = COALESCE(a.agent_id, '')
 AND COALESCE(b.run_id, '') = COALESCE(a.run_id, '')
WHERE {_SEEKER_FILTER}
  AND b.project_id = %(project)s AND b.deleted_at IS NULL AND b.embedding IS NOT NULL
  AND b.user_id IS NOT DISTINCT FROM a.user_id AND b.agent_id IS NOT DISTINCT FROM a.agent_id
  AND b.run_id IS NOT DISTINCT FROM a.run_id AND {{pair}}
  AND (a.embedding <=> b.embedding) <= %(max_distance)s
"""

# a seeker's CANDIDATES nearest of the project: through the graph, and those pending
_NEAREST = graph_and_pending(
    """
    SELECT b.id, b.user_id, b.agent_id, b.run_id, b.embedding <=> a.embedding AS distance
    FROM memories_memory b
    WHERE b.project_id = %(project)s AND b.deleted_at IS NULL AND {pending}
    ORDER BY b.embedding <=> a.embedding
    LIMIT %(candidates)s""",
    "b.vector_pending",
)

_PROBES_SQL = f"""
SELECT a.id, n.id, 1 - n.distance
{_SEEKERS}
CROSS JOIN LATERAL ({_NEAREST}) n
WHERE {_SEEKER_FILTER}
  AND n.id <> a.id
  AND n.user_id IS NOT DISTINCT FROM a.user_id AND n.agent_id IS NOT DISTINCT FROM a.agent_id
  AND n.run_id IS NOT DISTINCT FROM a.run_id
  AND n.distance <= %(max_distance)s
"""


def _sql(template: str, since: datetime | None) -> str:
    """A full run compares each pair once; an incremental one, changed memories with all."""
    changed = "a.updated_at >= %(since)s" if since is not None else "TRUE"
    pair = "a.id <> b.id" if since is not None else "a.id < b.id"
    return template.replace("{changed}", changed).replace("{pair}", pair)


# Per plan, the session settings that make PostgreSQL run it as intended. The exact plan must
# hash-join (a nested loop would compare every pair of the project, not of each scope); the
# probes must stay HNSW index scans: with the project filter inside, the planner may guess a
# sort of the project's rows is cheaper, which costs O(project) per probe.
_EXACT_SETTINGS = {"enable_nestloop": "off", "work_mem": "64MB"}
PROBE_SETTINGS = {
    "enable_sort": "off",
    "hnsw.ef_search": str(EF_SEARCH),
    "hnsw.iterative_scan": "relaxed_order",
    "hnsw.max_scan_tuples": str(MAX_SCAN_TUPLES),
}


@dataclass(frozen=True)
class ScopeSize:
    key: tuple[str, str, str]  # user_id, agent_id, run_id with '' for NULL
    memories: int
    seekers: int  # memories that look for partners (all, or those changed since)


@dataclass
class PairSearch:
    pairs: list[Pair]
    seekers: int
    exact_scopes: int
    probed_scopes: int


def candidate_pairs(
    *, project: Project, min_similarity: float, since: datetime | None = None
) -> PairSearch:
    """Pairs (a, b, cosine similarity) of live memories of one scope, similarity at least
    `min_similarity`; with `since`, only pairs whose `a` changed at or after `since`."""
    sizes = _scope_sizes(project, since)
    project_memories, table_rows = sum(s.memories for s in sizes), estimated_table_rows()
    scopes = [scope for scope in sizes if scope.seekers]
    exact, probed = [], []
    for scope in scopes:
        cheaper = exact_is_cheaper(scope.memories, project_memories, table_rows)
        (exact if cheaper else probed).append(scope)
    params = {"project": project.pk, "since": since, "max_distance": 1.0 - min_similarity}
    pairs = _run(_sql(_EXACT_SQL, since), _EXACT_SETTINGS, exact, params)
    pairs += _run(
        _sql(_PROBES_SQL, since), PROBE_SETTINGS, probed, {**params, "candidates": CANDIDATES}
    )
    return PairSearch(
        pairs=pairs,
        seekers=sum(scope.seekers for scope in scopes),
        exact_scopes=len(exact),
        probed_scopes=len(probed),
    )


def exact_is_cheaper(scope_memories: int, project_memories: int, table_rows: int) -> bool:
    return scope_memories <= exact_scope_limit(project_memories, table_rows)


def exact_scope_limit(project_memories: int, table_rows: int) -> int:
    """The largest scope the exact plan should take: per seeking memory, one distance per
    memory of its scope, against one probe that steps over other projects' rows until it
    has CANDIDATES of its own."""
    return int(probe_cost_us(project_memories, table_rows) / max(PAIR_COST_US, 1e-6))


def probe_cost_us(project_memories: int, table_rows: int) -> float:
    """What one probe costs (µs) in a table of `table_rows` of which the project has
    `project_memories`: the walk of the graph, and the other projects' rows it steps over."""
    # A table smaller than the one the probe cost was measured in (or not yet analysed:
    # reltuples is 0 for a new table) is costed as that one: the exact plan is complete,
    # and the model's probes below it would be cheaper than the statement they run in.
    rows = max(table_rows, project_memories, PROBE_TABLE_ROWS)
    share = max(project_memories, 1) / rows
    stepped_over = min(MAX_SCAN_TUPLES, CANDIDATES / share) - CANDIDATES
    probe = PROBE_COST_US * (rows / PROBE_TABLE_ROWS) ** PROBE_GROWTH
    return probe + SKIP_COST_US * stepped_over


def _scope_sizes(project: Project, since: datetime | None) -> list[ScopeSize]:
    with connection.cursor() as cursor:
        cursor.execute(_sql(_SCOPES_SQL, since), {"project": project.pk, "since": since})
        rows = cursor.fetchall()
    sizes: dict[tuple[str, str, str], ScopeSize] = {}
    for user, agent, run, memories, seekers in rows:
        key = (user or "", agent or "", run or "")
        if key in sizes:  # '' and NULL share a key; the SQL tells them apart again
            memories, seekers = memories + sizes[key].memories, seekers + sizes[key].seekers
        sizes[key] = ScopeSize(key, memories, seekers)
    return list(sizes.values())


def estimated_table_rows() -> int:
    """The planner's estimate of the table's rows (free: no scan)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = 'memories_memory'::regclass"
        )
        (rows,) = cursor.fetchone()
    return max(int(rows), 0)  # -1 before the first ANALYZE


def _run(
    sql: str, settings: dict[str, str], scopes: list[ScopeSize], params: dict[str, Any]
) -> list[Pair]:
    if not scopes:
        return []
    keys = {
        "users": [scope.key[0] for scope in scopes],
        "agents": [scope.key[1] for scope in scopes],
        "runs": [scope.key[2] for scope in scopes],
    }
    # settings are transaction-local: one transaction (or savepoint) around them and the query
    with transaction.atomic(), connection.cursor() as cursor, local_settings(cursor, settings):
        cursor.execute(sql, {**params, **keys})
        return [(a, b, float(similarity)) for a, b, similarity in cursor.fetchall()]


@contextmanager
def local_settings(cursor: Any, settings: dict[str, str]) -> Iterator[None]:
    """Transaction-local settings for the statements inside, then back to what they were
    (the caller's transaction goes on with ordinary queries); one round trip each way."""
    names, values = list(settings), list(settings.values())
    reads = ", ".join(f"current_setting(%s, true) AS s{i}" for i in range(len(names)))
    writes = ", ".join("set_config(%s, %s, true)" for _ in names)
    # the old values are read (materialized) before the writes
    cursor.execute(
        f"WITH old AS MATERIALIZED (SELECT {reads}) SELECT old.*, {writes} FROM old",
        [*names, *_pairs(names, values)],
    )
    before = dict(zip(names, cursor.fetchone()[: len(names)], strict=True))
    try:
        yield
    finally:
        restore = {name: value for name, value in before.items() if value is not None}
        if restore:
            writes = ", ".join("set_config(%s, %s, true)" for _ in restore)
            cursor.execute(f"SELECT {writes}", _pairs(list(restore), list(restore.values())))


def _pairs(names: list[str], values: list[str]) -> list[str]:
    return [item for pair in zip(names, values, strict=True) for item in pair]
