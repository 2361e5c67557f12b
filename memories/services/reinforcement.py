"""Reinforcement: a memory that is returned (by search or a GET) gets stronger.

access_count + 1, last_accessed_at = now, confidence + step capped at 1.0, and a warm or
cold memory back in Memento's hot tier.

Entry points call `memories_reinforce_later` once they have answered. Outside a transaction
the reads are queued, and the reads of the next MEMORY_REINFORCEMENT_DELAY_MS (200 ms) are
merged into one UPDATE on a thread of its own: the reinforcement never slows the read that
caused it, and a busy server runs one small UPDATE (one commit) per interval, not one per
request beside the next request. A memory read n times in the interval gets what n separate
updates would have given it: access_count + n, confidence + n × step capped at 1.0, and
last_accessed_at the time of its last read. Inside a transaction (a test's rollback-wrapped
database, an `atomic` caller) the update runs at once, in it. Plain history is not written:
reads are not changes.

Queued reads are process memory: they are applied at the latest when the process exits
normally; a crash loses at most one interval of access counts (bookkeeping, not content). A
forked child starts with an empty queue: its parent's reads are applied once, by the parent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memories.models import Memory
from platformcore.lib.deferred import DeferredWrites
from platformcore.lib.project_scope import all_projects
from platformcore.lib.result_cache import quiet_writes
from tenants.models import Project

logger = logging.getLogger(__name__)

# Written out rather than built with the ORM: compiling a queryset cost more Python than the
# statement takes. One row of the arrays per (project, memory): its reads and the last one's
# time. The project is part of the key, so a memory id never reaches another project's row.
_REINFORCE_SQL = f"""UPDATE {connection.ops.quote_name(Memory._meta.db_table)} AS m
SET access_count = m.access_count + r.reads,
    last_accessed_at = GREATEST(m.last_accessed_at, r.read_at),
    confidence = LEAST(m.confidence + %s * r.reads, 1.0),
    ttl_tier = CASE WHEN m.ttl_tier IN ('warm', 'cold') THEN 'hot' ELSE m.ttl_tier END
FROM unnest(%s::bigint[], %s::uuid[], %s::integer[], %s::timestamptz[])
    AS r(project_id, id, reads, read_at)
WHERE m.project_id = r.project_id AND m.id = r.id AND m.deleted_at IS NULL
"""

Reads = dict[tuple[int, UUID], tuple[int, datetime]]  # (project, memory) -> (reads, last read)


def memories_reinforce(*, project: Project, memory_ids: Iterable[UUID | str]) -> int:
    """Reinforce the project's live memories among `memory_ids` now; returns how many."""
    now = timezone.now()
    return _apply({(project.pk, memory_id): (1, now) for memory_id in _ids(memory_ids)})


def memories_reinforce_later(*, project: Project, memory_ids: Iterable[UUID | str]) -> None:
    """Reinforce, for a read that has been answered: queued and merged with the reads of the
    next interval (see the module). Inside a transaction: now, in it."""
    if connection.in_atomic_block:
        memories_reinforce(project=project, memory_ids=memory_ids)
        return
    ids, now = _ids(memory_ids), timezone.now()
    if ids:
        _queue.add(lambda reads: _merge(reads, project.pk, ids, now))


def reinforcements_flush() -> int:
    """Apply every queued read now (process exit, tests); returns the rows updated."""
    return _queue.flush()


def _ids(memory_ids: Iterable[UUID | str]) -> list[UUID]:
    return list(dict.fromkeys(UUID(str(memory_id)) for memory_id in memory_ids))


def _apply(reads: Reads) -> int:
    if not reads:
        return 0
    keys = list(reads)
    # one merged UPDATE for the reads of every project (each queued by its own scoped read);
    # what a read leaves behind changes no cached search answer
    with (
        all_projects("reinforcement of queued reads", routine=True),
        quiet_writes(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            _REINFORCE_SQL,
            [
                float(settings.MEMORY_REINFORCEMENT_STEP),
                [project_id for project_id, _ in keys],
                [memory_id for _, memory_id in keys],
                [reads[key][0] for key in keys],
                [reads[key][1] for key in keys],
            ],
        )
        return cursor.rowcount


def _merge(reads: Reads, project_id: int, memory_ids: list[UUID], at: datetime) -> None:
    for memory_id in memory_ids:
        count, _ = reads.get((project_id, memory_id), (0, at))
        reads[(project_id, memory_id)] = (count + 1, at)


_queue: DeferredWrites[Reads] = DeferredWrites(
    "reinforce",
    empty=dict,
    write=_apply,
    delay=lambda: settings.MEMORY_REINFORCEMENT_DELAY_MS / 1000,
)
