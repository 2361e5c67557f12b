"""Bulk writes: many memories in a handful of statements, with the rules of a single write.

`memories_create_bulk` keeps every rule of `memory_create` (exact duplicates return the
existing memory, near-duplicates merge into the older memory of the same scope, history,
events, graph, consolidation counter) but does the work set-wise, because a bulk write should
cost little more than embedding its texts:

1. one embedding batch for the texts that are not exact duplicates, before any lock is taken;
2. one advisory-lock statement for all the batch's scopes (the same locks single writers take);
3. one query for live exact duplicates; duplicates inside the batch are found in Python; the
   new memories take their vectors from step 1;
4. one query per scope for the live neighbours of its new memories: every memory of the scope
   compared with them when the scope is small enough for the batch (`bulk_exact_limit`,
   from consolidation's probe-cost model), else a LATERAL HNSW probe each; and a similarity
   matrix for near-duplicates inside the batch;
5. one INSERT for the new rows and one for their ADD history rows; then the merges, set-wise
   (`merge_many`: one locking read, one UPDATE, one INSERT of MERGE history).

Step 4 is the write's largest cost after the embedding and the INSERT. With `near_duplicates`
"consolidation" (per write, or the project's `bulk_near_duplicates`) it is skipped: every
memory that is not an exact duplicate is inserted, and the consolidation job that the inserts
enqueue (every `consolidation_interval` of them, and daily) merges the near-duplicates with
consolidation's rules (memories.services.consolidation). Imports go faster; until that job
has run, a near-duplicate is a memory of its own.

If the one INSERT hits the live-duplicate constraint anyway (a row restored or updated into a
duplicate meanwhile), it is rolled back to its savepoint and the batch's new rows take the
single-write path one by one, which handles that race.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import numpy as np
from django.db import IntegrityError, connection, transaction

from memories.memory_scope import Scope
from memories.models import HistoryEvent, Memory
from memories.selectors.pending_vectors import graph_and_pending
from memories.services.consolidation_pairs import (
    PROBE_SETTINGS,
    estimated_table_rows,
    local_settings,
    probe_cost_us,
)
from memories.services.contradictions import contradiction_cues
from memories.services.dedup import lock_scopes, merge_many, merge_near_duplicate
from memories.services.embedding import embed_or_none, prefetched_embeddings
from memories.services.episodes import episodes_for_memories
from memories.services.memories import MemoryInput, after_inserts, validated, with_defaults
from memories.services.pii import scrub_for_storage
from memories.services.tuning import tuning
from memories.services.write_kernel import (
    DUPLICATE_CONSTRAINT,
    CreateResult,
    announce_stored,
    build_memory,
    emit_memory_events,
    find_live_duplicate,
    history_entry,
    insert_memory,
    snapshot,
)
from platformcore.lib.actor import Actor
from platformcore.lib.bulk import insert_rows
from platformcore.lib.errors import InvalidInput
from platformcore.lib.vectors import vector_literal
from tenants.models import Project

MAX_BULK_ITEMS = 1000
NEIGHBOURS = 3

# Live neighbours of one scope for the new memories of that scope, two ways (the scope is
# constants, so its index finds its rows). Exact: every memory of the scope against every new
# one, when the scope is small enough for the batch (`bulk_exact_limit`);
# the scope's rows are read at most cap + 1 times, and a NULL row says the scope is larger.
# Only ids and vectors are compared (a user's scope reads them from the covering
# (project, user_id) index, no table page per memory); the content is joined for the
# neighbours found, after them (`near` MATERIALIZED: the planner, expecting a third of the
# distances to pass, would fetch the content of every scope row first).
_EXACT_SQL = """
WITH scope AS MATERIALIZED (
    SELECT m.id, m.embedding
    FROM memories_memory m
    WHERE m.project_id = %(project)s AND m.deleted_at IS NULL AND m.embedding IS NOT NULL
      AND {scope}
    LIMIT %(cap)s + 1
), near AS MATERIALIZED (
    SELECT q.i, s.id, 1 - (s.embedding <=> q.v) AS similarity
    FROM scope s, unnest(%(indexes)s::int[], %(vectors)s::vector[]) AS q(i, v)
    WHERE (SELECT count(*) FROM scope) <= %(cap)s AND (s.embedding <=> q.v) <= %(max_distance)s
)
SELECT n.i, n.id, m.content, n.similarity
FROM near n JOIN memories_memory m ON m.id = n.id
UNION ALL
SELECT NULL, NULL, NULL, NULL WHERE (SELECT count(*) FROM scope) > %(cap)s
"""
# Probes, for a larger scope (run with consolidation's PROBE_SETTINGS): the NEIGHBOURS nearest
# of the scope for each new memory, a LATERAL HNSW scan each (iterative scans fill NEIGHBOURS
# rows of the scope); the scope's rows whose vector is pending are ranked exactly beside it.
_NEIGHBOURS_SQL = """
SELECT q.i, n.id, n.content, 1 - n.distance
FROM unnest(%(indexes)s::int[], %(vectors)s::vector[]) AS q(i, v)
CROSS JOIN LATERAL ({nearest}) n
WHERE n.distance <= %(max_distance)s
""".replace(
    "{nearest}",
    graph_and_pending(
        """
    SELECT m.id, m.content, m.embedding <=> q.v AS distance
    FROM memories_memory m
    WHERE m.project_id = %(project)s AND m.deleted_at IS NULL AND m.embedding IS NOT NULL
      AND {pending} AND {scope}
    ORDER BY m.embedding <=> q.v
    LIMIT %(limit)s""",
        "m.vector_pending",
    ),
)


@dataclass(frozen=True)
class _Twin:
    """What a new item merges into: a live row (`row_id`) or an earlier new item (`item`)."""

    similarity: float
    row_id: UUID | None = None
    item: int | None = None


@dataclass
class _Plan:
    """What happens to each item: an existing row, a merge, or an insert."""

    existing: dict[int, Memory] = field(default_factory=dict)  # live exact duplicate
    same_as: dict[int, int] = field(default_factory=dict)  # earlier item, same duplicate key
    merges: dict[int, _Twin] = field(default_factory=dict)  # near-duplicate to merge into
    inserts: list[int] = field(default_factory=list)


# What a bulk write may leave to a job: the option's values, the first being "do it now".
BULK_OPTIONS = {
    "near_duplicates": ("inline", "consolidation"),
    "vector_index": ("inline", "deferred"),
}
NEAR_DUPLICATE_MODES = BULK_OPTIONS["near_duplicates"]
VECTOR_INDEX_MODES = BULK_OPTIONS["vector_index"]


def memories_create_bulk(
    *,
    project: Project,
    items: list[MemoryInput],
    actor: Actor,
    near_duplicates: str | None = None,
    vector_index: str | None = None,
) -> list[CreateResult]:
    """Store many memories (see the module docstring); all or nothing on invalid input.
    Results are in the order of `items`. The texts that are not exact duplicates are
    embedded before the scope locks are taken (the duplicates are found again under the
    locks), so while one bulk write holds the locks of its scopes, the next can already be
    embedding. `near_duplicates`: "inline" or "consolidation"; `vector_index`: "inline" or
    "deferred" (the new rows enter the HNSW graph by a job, memories.services.vector_index);
    None: the project's `bulk_near_duplicates` / `bulk_vector_index`."""
    if len(items) > MAX_BULK_ITEMS:  # here, not only in the REST serializer: every caller
        message = f"at most {MAX_BULK_ITEMS} memories in one bulk write, got {len(items)}"
        raise InvalidInput(message, fields={"memories": [message]})
    inline = bulk_option(project, "near_duplicates", near_duplicates) == "inline"
    deferred = bulk_option(project, "vector_index", vector_index) == "deferred"
    memories = [_build_item(project, index, item) for index, item in enumerate(items)]
    episodes_for_memories(
        project=project, memories=memories, requested=[i.episode_id for i in items]
    )
    likely_new = _plan_exact(project, memories).inserts  # a hint: planned again under the locks
    with prefetched_embeddings([memories[index].content for index in likely_new]):
        return _create_all(project, memories, items, actor, inline=inline, deferred=deferred)


def bulk_option(project: Project, name: str, requested: str | None = None) -> str:
    """A bulk write's `name` option (BULK_OPTIONS): `requested`, else the project's
    `bulk_<name>` (which falls back on the MEMORY_BULK_<NAME> setting)."""
    value = requested if requested is not None else tuning(project, f"bulk_{name}")
    if value not in BULK_OPTIONS[name]:
        message = f"must be one of {', '.join(BULK_OPTIONS[name])}"
        raise InvalidInput(f"{name} {message}", fields={name: [message]})
    return str(value)


@transaction.atomic
def _create_all(
    project: Project,
    memories: list[Memory],
    items: list[MemoryInput],
    actor: Actor,
    *,
    inline: bool,
    deferred: bool,
) -> list[CreateResult]:
    lock_scopes(project=project, scopes=[Scope.of(memory) for memory in memories])
    plan = _plan_exact(project, memories)
    fresh = [memories[index] for index in plan.inserts]
    for memory, vector in zip(fresh, embed_or_none([m.content for m in fresh]), strict=True):
        memory.embedding = vector
        memory.vector_pending = deferred and vector is not None
    if inline:
        _plan_near(project, memories, plan)
    created = _insert_all(project, [memories[index] for index in plan.inserts], actor)
    results = _results(memories, plan, created, actor)
    announce_stored(project, results, items)
    after_inserts(project, results)
    if any(result.created and result.memory.vector_pending for result in results):
        # imported here: memories.tasks imports this module (cycle)
        from memories.tasks import enqueue

        enqueue("memories.tasks.index_vectors")  # after the commit
    return results


def _build_item(project: Project, index: int, item: MemoryInput) -> Memory:
    """The row of `item`, as `memory_create` builds it, with errors naming the item:
    `memories.3.content`."""
    try:
        scope = item.scope()  # a memory needs a scope, as on a single write
        values = scrub_for_storage(project=project, values=validated(item))
        memory = build_memory(project, with_defaults(values), scope)
    except InvalidInput as exc:
        fields = {f"memories.{index}.{name}": msgs for name, msgs in exc.fields.items()}
        raise InvalidInput(f"memories.{index}: {exc.message}", fields=fields) from exc
    return memory


def _key(memory: Memory) -> tuple[str, str | None, str | None, str | None]:
    return (memory.content_hash, memory.user_id, memory.agent_id, memory.run_id)


def _plan_exact(project: Project, memories: list[Memory]) -> _Plan:
    digests = {memory.content_hash for memory in memories}
    rows = Memory.objects.for_project(project).alive().filter(content_hash__in=digests)
    live = {_key(row): row for row in rows}
    plan = _Plan()
    first: dict[tuple, int] = {}
    for index, memory in enumerate(memories):
        key = _key(memory)
        if key in live:
            plan.existing[index] = live[key]
        elif key in first:
            plan.same_as[index] = first[key]
        else:
            first[key] = index
            plan.inserts.append(index)
    return plan


def _plan_near(project: Project, memories: list[Memory], plan: _Plan) -> None:
    """Move near-duplicates (≥ dedup_threshold, same scope, no contradiction cues) from
    `plan.inserts` to `plan.merges`: into the most similar live row or earlier new item."""
    threshold = float(tuning(project, "dedup_threshold"))
    candidates = [i for i in plan.inserts if memories[i].embedding is not None]
    if threshold >= 1.0 or not candidates:
        return
    in_store = _store_neighbours(project, memories, candidates, threshold)
    similarity = _similarity_matrix([memories[i].embedding for i in candidates])
    kept: list[int] = []  # positions in `candidates` of the items that stay inserts
    for position, index in enumerate(candidates):
        memory = memories[index]
        twins = [
            _Twin(score, row_id=row_id)
            for row_id, content, score in in_store.get(index, [])
            if not contradiction_cues(content, memory.content)
        ]
        for earlier in kept:
            other = memories[candidates[earlier]]
            score = float(similarity[position, earlier])
            if (
                score >= threshold
                and Scope.of(other) == Scope.of(memory)
                and not contradiction_cues(other.content, memory.content)
            ):
                twins.append(_Twin(score, item=candidates[earlier]))
        if twins:
            plan.merges[index] = max(twins, key=lambda twin: twin.similarity)
        else:
            kept.append(position)
    plan.inserts = [index for index in plan.inserts if index not in plan.merges]


def _similarity_matrix(vectors: list) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return matrix @ matrix.T


def _store_neighbours(
    project: Project, memories: list[Memory], indexes: list[int], threshold: float
) -> dict[int, list[tuple[UUID, str, float]]]:
    """{item index: [(id, content, similarity)]} of live same-scope memories ≥ threshold;
    one statement per distinct scope in the batch: exact while the scope is small enough,
    else probes (with consolidation's probe settings, set once for all of them). A scope
    found too large is remembered for a while, so the next batches probe it at once."""
    by_scope: dict[Scope, list[int]] = {}
    for index in indexes:
        by_scope.setdefault(Scope.of(memories[index]), []).append(index)
    table_rows = estimated_table_rows()  # the project's share unknown: costed as all of it
    probe = probe_cost_us(table_rows, table_rows)
    found: dict[int, list[tuple[UUID, str, float]]] = {}
    probed: list[tuple[str, dict[str, Any]]] = []
    with connection.cursor() as cursor:
        for scope, members in by_scope.items():
            cap = bulk_exact_limit(probe, len(members))
            where, params = _scope_statement(project, scope, memories, members, threshold, cap)
            if _known_large(project, scope):
                probed.append((where, params))
                continue
            cursor.execute(_EXACT_SQL.format(scope=where), params)
            rows = cursor.fetchall()
            if rows and rows[-1][0] is None:  # the scope is larger than cap: probe it
                _remember_large(project, scope)
                probed.append((where, params))
                continue
            _collect(found, rows)
        if probed:
            with local_settings(cursor, PROBE_SETTINGS):
                for where, params in probed:
                    cursor.execute(_NEIGHBOURS_SQL.format(scope=where), params)
                    _collect(found, cursor.fetchall())
    return found


# The exact statement's cost per scope, measured at 137k memories: reading a scope row
# (from the covering index) once for all the batch's memories of that scope, then each
# distance. A probe here costs what consolidation's model says. Several new memories of a
# scope share its reading, so bulk writes compare larger scopes exactly than consolidation.
SCOPE_ROW_US = 1.2
DISTANCE_US = 0.16
PROBE_SHARE = 1.0


def bulk_exact_limit(probe_us: float, seekers: int) -> int:
    """The largest scope whose exact statement costs no more than `seekers` probes."""
    return int(seekers * probe_us * PROBE_SHARE / (SCOPE_ROW_US + seekers * DISTANCE_US))


# (project id, scope) → when a bulk write found it larger than the exact plan's cap
_LARGE_SCOPES: dict[tuple[int, Scope], float] = {}
LARGE_SCOPE_SECONDS = 300.0


def _remember_large(project: Project, scope: Scope) -> None:
    now = time.monotonic()
    if len(_LARGE_SCOPES) >= 10_000:  # only scopes of thousands of memories get here
        for key in [k for k, seen in _LARGE_SCOPES.items() if now - seen >= LARGE_SCOPE_SECONDS]:
            del _LARGE_SCOPES[key]
    _LARGE_SCOPES[(project.pk, scope)] = now


def _known_large(project: Project, scope: Scope) -> bool:
    seen = _LARGE_SCOPES.get((project.pk, scope))
    return seen is not None and time.monotonic() - seen < LARGE_SCOPE_SECONDS


def _scope_statement(
    project: Project,
    scope: Scope,
    memories: list[Memory],
    members: list[int],
    threshold: float,
    cap: int,
) -> tuple[str, dict[str, Any]]:
    conditions, params = [], {}
    for name in ("user_id", "agent_id", "run_id"):
        value = getattr(scope, name)
        conditions.append(f"m.{name} = %({name})s" if value else f"m.{name} IS NULL")
        params[name] = value
    params |= {
        "indexes": members,
        "vectors": [vector_literal(memories[i].embedding) for i in members],  # type: ignore[arg-type]
        "project": project.pk,
        "cap": cap,
        "limit": NEIGHBOURS,
        "max_distance": 1.0 - threshold,
    }
    return " AND ".join(conditions), params


def _collect(found: dict[int, list[tuple[UUID, str, float]]], rows: list[tuple]) -> None:
    for index, row_id, content, score in rows:
        found.setdefault(index, []).append((row_id, content, float(score)))


def _insert_all(project: Project, memories: list[Memory], actor: Actor) -> dict[UUID, CreateResult]:
    """Insert the new rows and their ADD history in two statements; on a duplicate-constraint
    race, fall back to the single-write path for these rows."""
    if not memories:
        return {}
    try:
        with transaction.atomic():
            insert_rows(memories)
    except IntegrityError as exc:
        if DUPLICATE_CONSTRAINT not in str(exc):
            raise
        for memory in memories:
            memory._state.adding, memory._state.db = True, None
        return {memory.pk: _insert_one(memory, actor) for memory in memories}
    insert_rows([history_entry(m, HistoryEvent.ADD, actor, new=snapshot(m)) for m in memories])
    emit_memory_events(
        project,
        [
            (m, "memory_created", {"content": m.content, "memory_type": m.memory_type})
            for m in memories
        ],
    )
    return {memory.pk: CreateResult(memory, created=True) for memory in memories}


def _insert_one(memory: Memory, actor: Actor) -> CreateResult:
    """The single write's path for one planned row, after a duplicate-constraint race."""
    existing = find_live_duplicate(
        project=memory.project, digest=memory.content_hash, scope=Scope.of(memory)
    )
    if existing is not None:
        return CreateResult(existing, created=False)
    survivor = merge_near_duplicate(memory=memory, actor=actor)
    if survivor is not None:
        return CreateResult(survivor, created=False)
    return insert_memory(memory, actor)


def _results(
    memories: list[Memory], plan: _Plan, created: dict[UUID, CreateResult], actor: Actor
) -> list[CreateResult]:
    results: dict[int, CreateResult] = {
        index: CreateResult(row, created=False) for index, row in plan.existing.items()
    }
    for index in plan.inserts:
        results[index] = created[memories[index].pk]
    merges = sorted(plan.merges.items())  # targets are inserted (or live) by now
    pairs = [
        (twin.row_id if twin.item is None else results[twin.item].memory.pk, memories[index])
        for index, twin in merges
    ]
    for (index, _), survivor in zip(merges, merge_many(pairs=pairs, actor=actor), strict=True):
        results[index] = CreateResult(survivor, created=False)
    for index, earlier in sorted(plan.same_as.items()):
        results[index] = CreateResult(results[earlier].memory, created=False)
    return [results[index] for index in range(len(memories))]
