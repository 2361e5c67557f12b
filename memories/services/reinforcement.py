"""Reinforcement: a memory that is returned (by search or a GET) gets stronger.

access_count + 1, last_accessed_at = now, confidence + step capped at 1.0.

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

import atexit
import logging
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memories.models import Memory
from memoryplatform.lib.db_threads import executor_with_connections, with_connection
from tenants.models import Project

logger = logging.getLogger(__name__)

# Written out rather than built with the ORM: compiling a queryset cost more Python than the
# statement takes. One row of the arrays per (project, memory): its reads and the last one's
# time. The project is part of the key, so a memory id never reaches another project's row.
_REINFORCE_SQL = f"""UPDATE {connection.ops.quote_name(Memory._meta.db_table)} AS m
SET access_count = m.access_count + r.reads,
    last_accessed_at = GREATEST(m.last_accessed_at, r.read_at),
    confidence = LEAST(m.confidence + %s * r.reads, 1.0)
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
    _queue.add(project.pk, _ids(memory_ids), timezone.now())


def reinforcements_flush() -> int:
    """Apply every queued read now (process exit, tests); returns the rows updated."""
    return _queue.flush()


def _ids(memory_ids: Iterable[UUID | str]) -> list[UUID]:
    return list(dict.fromkeys(UUID(str(memory_id)) for memory_id in memory_ids))


def _apply(reads: Reads) -> int:
    if not reads:
        return 0
    keys = list(reads)
    with connection.cursor() as cursor:
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


class _Queue:
    """The reads waiting for the next merged UPDATE, and the one thread that applies them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: Reads = {}
        self._scheduled = False
        self._executor: tuple[int, ThreadPoolExecutor] | None = None

    def forget(self) -> None:
        """In a forked child: the parent's queued reads are the parent's to apply (once), and
        its lock and thread are not this process's."""
        self._lock = threading.Lock()
        self._reads, self._scheduled = {}, False

    def add(self, project_id: int, memory_ids: list[UUID], at: datetime) -> None:
        if not memory_ids:
            return
        with self._lock:
            for memory_id in memory_ids:
                reads, _ = self._reads.get((project_id, memory_id), (0, at))
                self._reads[(project_id, memory_id)] = (reads + 1, at)
            if not self._scheduled:
                try:
                    self._thread().submit(with_connection, self._flush_after_delay)
                    self._scheduled = True
                except RuntimeError:  # the interpreter is exiting: the exit flush has them
                    pass

    def flush(self) -> int:
        with self._lock:
            reads, self._reads, self._scheduled = self._reads, {}, False
        return _apply(reads)

    def _flush_after_delay(self) -> None:
        time.sleep(settings.MEMORY_REINFORCEMENT_DELAY_MS / 1000)
        try:
            self.flush()
        except Exception:  # the reads were answered; their bookkeeping is what is lost
            logger.exception("reinforcement update failed")

    def _thread(self) -> ThreadPoolExecutor:
        pid = os.getpid()  # a forked process starts a thread of its own
        if self._executor is None or self._executor[0] != pid:
            if self._executor is None:
                atexit.register(_flush_at_exit)
            self._executor = (pid, executor_with_connections(1, "reinforce"))
        return self._executor[1]


def _flush_at_exit() -> None:
    try:
        _queue.flush()
    except Exception:
        logger.warning("queued reinforcements not applied at exit", exc_info=True)


_queue = _Queue()
os.register_at_fork(after_in_child=_queue.forget)
