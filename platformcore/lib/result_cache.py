"""A short-lived cache of search results, per project and query, that writes invalidate.

Agents repeat themselves: the same recall at every turn of a conversation, the same query
from several tools. A repeated search is answered from this process's memory instead of
running again, for at most `MEMORY_SEARCH_CACHE_SECONDS` (30 by default; 0 turns it off),
and never after a write in the project that could change its answer.

Invalidation does not depend on every service remembering to say it wrote. The database
backend (platformcore/db/postgresql/base.py) reports every INSERT, UPDATE or DELETE it runs
to `note_write`, with the row-level-security scope the statement ran under (a project, or
every project for maintenance jobs):

- at once, this process's own generation of that project moves on, so this process never
  serves an answer older than its own uncommitted write (a test's rolled-back transaction);
- when the transaction commits, a generation shared by every process (the `limits` cache:
  Redis when REDIS_URL is set, else a table) is set to a new unique value, so the web
  processes and the job worker all miss from then on. A search reads the shared generation
  before it runs, so an answer computed before a commit is stored under the generation the
  commit replaced, and is never read again.

Bookkeeping that follows a read (reinforcement, search statistics) runs inside
`quiet_writes()`: it changes no answer worth a miss. Only writes to the tables answers are
made of count (memories, the graph, documents, project settings): not keys, jobs, sessions,
the event log or statistics.
Answers are keyed by project: no project ever reads another's.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import caches
from django.core.signals import setting_changed

from platformcore.lib.project_scope import ALL_PROJECTS, Scope

logger = logging.getLogger(__name__)

T = TypeVar("T")

_WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "COPY", "MERGE", "TRUNCATE")
# what answers are made of; writes to other tables (keys, jobs, sessions, the event log,
# statistics, this cache's own) change no answer
_ANSWER_TABLES = ("memories_", "entities_", "documents_", "tenants_project")
_WRITE_IN_WITH = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE\s+\S+(?:\s+(?:AS\s+)?\w+)?\s+SET|DELETE\s+FROM)\b", re.I
)
_EVERY_PROJECT = "*"

_quiet: ContextVar[bool] = ContextVar("memory_quiet_writes", default=False)


@contextmanager
def quiet_writes() -> Iterator[None]:
    """Writes in this block change no search answer (what a read leaves behind)."""
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


def changes_answers(sql: str) -> bool:
    """A statement that writes to a table search answers are made of."""
    head = sql.lstrip()[:10].upper()
    if head.startswith("WITH"):
        if not _WRITE_IN_WITH.search(sql):
            return False
    elif not head.startswith(_WRITE_VERBS):
        return False
    start = sql[:400]
    return any(table in start for table in _ANSWER_TABLES)


class _Generations:
    """This process's generations (moved at once) and the shared ones (moved on commit)."""

    def __init__(self) -> None:
        self._local: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def key(self, project_id: int) -> tuple[Any, ...]:
        shared = _shared_cache().get_many([_shared_key(project_id), _shared_key(_EVERY_PROJECT)])
        with self._lock:
            local = (self._local.get(project_id, 0), self._local.get(_EVERY_PROJECT, 0))
        return (
            shared.get(_shared_key(project_id)),
            shared.get(_shared_key(_EVERY_PROJECT)),
            *local,
        )

    def move_local(self, target: Hashable) -> None:
        with self._lock:
            self._local[target] = self._local.get(target, 0) + 1

    def move_shared(self, targets: set[Hashable]) -> None:
        """A new unique value, not an increment: two commits at once must both be seen."""
        try:
            _shared_cache().set_many(
                {_shared_key(target): uuid.uuid4().hex for target in targets}, timeout=None
            )
        except Exception:  # results then live out their short lifetime; the write stands
            logger.warning("could not invalidate cached search results", exc_info=True)


def _shared_cache() -> Any:
    return caches["limits"]


def _shared_key(target: Hashable) -> str:
    return f"search-generation:{target}"


def _target(scope: Scope) -> Hashable | None:
    if scope is ALL_PROJECTS:
        return _EVERY_PROJECT
    return scope  # a project id, or None: no tenant rows can be written without a scope


class WriteTracker:
    """One per database connection: the projects its open transaction has written to (each
    has its shared generation moved once, when the transaction commits)."""

    def __init__(self) -> None:
        self.pending: set[Hashable] = set()

    def note(self, sql: str, scope: Scope, connection: Any) -> None:
        if not enabled() or _quiet.get() or not changes_answers(sql):
            return
        target = _target(scope)
        if target is None:
            return
        generations.move_local(target)
        if connection.get_autocommit():
            generations.move_shared({target})
        elif target not in self.pending:
            self.pending.add(target)
            connection.on_commit(lambda: generations.move_shared({target}))

    def transaction_ended(self) -> None:
        """Committed or rolled back (a rolled-back savepoint drops its commit callbacks)."""
        self.pending.clear()


class _Answers:
    """This process's answers, least recently used dropped first."""

    def __init__(self) -> None:
        self._items: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[bool, Any]:
        with self._lock:
            found = self._items.get(key)
            if found is None or found[0] < time.monotonic():
                return False, None
            self._items.move_to_end(key)
            return True, found[1]

    def put(self, key: Hashable, value: Any, seconds: float, limit: int) -> None:
        with self._lock:
            self._items[key] = (time.monotonic() + seconds, value)
            self._items.move_to_end(key)
            while len(self._items) > limit:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


generations = _Generations()
answers = _Answers()


def enabled() -> bool:
    return bool(getattr(settings, "MEMORY_SEARCH_CACHE_SECONDS", 0))


def cached(
    project_id: int, query: Hashable, compute: Callable[[], T], *, store: bool = True
) -> tuple[T, bool]:
    """`compute()`'s answer for `query` in the project, and whether it came from the cache.
    `store=False` for an answer computed on a read replica: it may lag the generation it
    would be filed under."""
    if not enabled():
        return compute(), False
    key = (project_id, query, generations.key(project_id))
    hit, value = answers.get(key)
    if hit:
        return value, True
    value = compute()
    if store:
        answers.put(
            key, value, settings.MEMORY_SEARCH_CACHE_SECONDS, settings.MEMORY_SEARCH_CACHE_ENTRIES
        )
    return value, False


def _forget_on_setting_change(**kwargs: Any) -> None:
    """A changed setting (tests, `override_settings`) may change every answer."""
    answers.clear()


setting_changed.connect(_forget_on_setting_change)
