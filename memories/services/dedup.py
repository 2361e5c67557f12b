"""Near-duplicate merge on every write.

Exact duplicates (same content hash, project and scope) are handled by `memory_create`. Here a
new memory whose embedding is at least `dedup_threshold` (0.95) similar to a live memory of the
*same* scope is merged into that older memory instead of being inserted: confidence is the
maximum, tags the union, metadata a shallow merge (new values win), `version` goes up and a
MERGE history row records what came in. Pairs with contradiction cues ("likes" / "does not
like") are never merged: they are different facts, however close their vectors are.

Concurrency: writers of one (project, scope) serialise on a transaction-level advisory lock
taken before the neighbour lookup, so two near-duplicates written at the same moment end up as
one memory, never two.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.utils import timezone

from memories.memory_scope import Scope
from memories.models import HistoryEvent, Memory, MemoryHistory
from memories.selectors.similar import nearest_in_scope
from memories.services.tuning import tuning
from memories.services.write_kernel import emit_memory_events, history_entry
from platformcore.lib.actor import Actor
from platformcore.lib.bulk import update_rows
from tenants.models import Project


def _lock_key(project_id: int, scope: Scope) -> int:
    raw = f"memory-scope|{project_id}|{scope.user_id}|{scope.agent_id}|{scope.run_id}"
    return int.from_bytes(hashlib.sha256(raw.encode()).digest()[:8], "big", signed=True)


def lock_scopes(*, project: Project, scopes: Iterable[Scope]) -> None:
    """Serialise writers of these scopes until the transaction ends (sorted: no deadlocks)."""
    keys = sorted({_lock_key(project.pk, scope) for scope in scopes})
    if not keys:
        return
    with connection.cursor() as cursor:  # one round trip; volatile calls run after the sort
        cursor.execute(
            "SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) AS k ORDER BY k", [keys]
        )


def find_near_duplicate(
    *, project: Project, content: str, embedding: list[float] | None, scope: Scope
) -> Memory | None:
    """The live memory of exactly this scope that `content` would merge into, if any."""
    threshold = float(tuning(project, "dedup_threshold"))
    if embedding is None or threshold >= 1.0:
        return None
    # contradictions supersedes through memory_update, whose module calls this one on
    # every write: this import closes a loop and cannot move up
    from memories.services.contradictions import contradiction_cues

    nearest = nearest_in_scope(project=project, embedding=embedding, scope=scope, limit=3)
    for neighbour in (n for n in nearest if n.similarity >= threshold):
        if not contradiction_cues(neighbour.memory.content, content):
            return neighbour.memory
    return None


def merge_near_duplicate(*, memory: Memory, actor: Actor) -> Memory | None:
    """Merge the unsaved `memory` into its live near-duplicate and return the survivor, or
    return None when there is none (the caller inserts `memory`)."""
    scope = Scope.of(memory)
    lock_scopes(project=memory.project, scopes=[scope])
    twin = find_near_duplicate(
        project=memory.project, content=memory.content, embedding=memory.embedding, scope=scope
    )
    if twin is None:
        return None
    return merge_into(survivor=twin, incoming=memory, actor=actor)


def merge_into(*, survivor: Memory, incoming: Memory, actor: Actor) -> Memory:
    """Fold `incoming` (saved or not) into `survivor` as a write does; returns the survivor."""
    return merge_many(pairs=[(survivor.pk, incoming)], actor=actor)[0]


_MERGED_FIELDS = ["confidence", "importance", "tags", "metadata", "pinned", "version", "updated_at"]


def merge_many(*, pairs: list[tuple[Any, Memory]], actor: Actor) -> list[Memory]:
    """`merge_into` for many (survivor id, incoming) pairs, in order, set-wise: one locking
    read of the survivors, one UPDATE, one INSERT of MERGE history. A survivor named twice
    takes both merges (version + 2, two history rows). Returns each pair's survivor."""

    survivors = Memory.objects.select_for_update().in_bulk([pk for pk, _ in pairs])
    history, events = [], []
    now = timezone.now()
    for pk, incoming in pairs:
        survivor = survivors[pk]
        old = {
            "confidence": survivor.confidence,
            "importance": survivor.importance,
            "tags": list(survivor.tags),
            "metadata": dict(survivor.metadata),
            "version": survivor.version,
        }
        survivor.confidence = max(survivor.confidence, incoming.confidence)
        survivor.importance = max(survivor.importance, incoming.importance)
        survivor.tags = list(dict.fromkeys([*survivor.tags, *incoming.tags]))
        survivor.metadata = {**survivor.metadata, **incoming.metadata}
        survivor.pinned = survivor.pinned or incoming.pinned
        survivor.version += 1
        survivor.updated_at = now
        saved = incoming.pk and not incoming._state.adding
        new = {
            "content": incoming.content,
            "confidence": survivor.confidence,
            "importance": survivor.importance,
            "tags": list(survivor.tags),
            "metadata": dict(survivor.metadata),
            "version": survivor.version,
            "merged_from": str(incoming.pk) if saved else None,
        }
        entry = history_entry(survivor, HistoryEvent.MERGE, actor, old=old, new=new)
        entry.old_content = survivor.content
        history.append(entry)
        events.append((incoming.project, survivor, incoming.content, survivor.version))
    update_rows(list(survivors.values()), _MERGED_FIELDS)
    MemoryHistory.objects.bulk_create(history)
    by_project: dict[Any, list] = {}  # the incoming's project: no query
    for project, survivor, content, version in events:
        merged = {"merged_content": content, "version": version}
        by_project.setdefault(project, []).append((survivor, "memories_merged", merged))
    for project, batch in by_project.items():
        emit_memory_events(project, batch)
    return [survivors[pk] for pk, _ in pairs]
