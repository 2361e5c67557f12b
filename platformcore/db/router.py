"""Read replicas: searches and lists read from a streaming standby, everything else from the
primary, and a key that has just written reads its own writes.

With `DATABASE_REPLICA_URLS` set, settings add one database alias per replica (`replica_0`,
`replica_1`, ...; each names its primary in `REPLICA_OF`) and install `ReplicaRouter`. What
may go to a replica is decided per request, by `ReplicaReadsMiddleware`:

- **Which requests**: API requests that only read: `GET`/`HEAD` under `/api/`, and searches
  (a `POST` whose path ends in `/search/`). Everything else (writes, MCP tool calls, which run
  in one transaction each, the admin, jobs, commands) reads the primary. Inside a transaction
  every read goes to the primary too: a replica cannot see what the transaction wrote.
- **Read-your-own-writes**: a replica replays the primary's writes a little later (usually
  milliseconds, seconds under load). When a transaction that wrote through the ORM commits,
  and when an API request that is not a read succeeds (writes in raw SQL or COPY included),
  the writing API key (a context variable that authentication sets, `note_key`) gets a marker
  in the shared
  "limits" cache (Redis with REDIS_URL, else a table on the primary) that expires after
  MEMORY_REPLICA_STICKY_SECONDS; while it is there, that key's reads go to the primary, on
  whichever server process the next request lands. Other keys keep reading the replica.
- **Failover**: a replica that cannot be connected to (refused, timed out) is marked down
  for MEMORY_REPLICA_RETRY_SECONDS and the connection is opened on the primary instead, so
  the request is answered (platformcore/db/postgresql/base.py); after the back-off the
  next request tries the replica again.

Replica connections are the platform's own backend like the primary's: the same runtime role
and row-level security scope per connection (roles and policies replicate with the data).

The ORM's reads follow the router; raw SQL follows the alias its caller chose: search
statements run on the alias of their queryset (`SearchBase.db`), and code that writes uses
`django.db.connection`, the primary.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, connections, transaction

STICKY_KEY = "replica-sticky:{}"

_reads_allowed: ContextVar[bool] = ContextVar("memory_replica_reads", default=False)
_writer_key: ContextVar[int | None] = ContextVar("memory_replica_writer", default=None)
_decision: ContextVar[str | None] = ContextVar("memory_replica_decision", default=None)

_lock = threading.Lock()
_down_until: dict[str, float] = {}  # replica alias -> monotonic time to try it again
_recent_writers: dict[int, float] = {}  # key id -> monotonic expiry, what this process saw


def replica_aliases() -> list[str]:
    """The configured replicas' aliases, in order."""
    return [alias for alias, db in settings.DATABASES.items() if db.get("REPLICA_OF")]


# --- who is asking ------------------------------------------------------------------------


def note_key(key_id: int) -> None:
    """The API key making this request (set by authentication): whose writes to remember,
    whose reads to keep on the primary after one."""
    _writer_key.set(key_id)
    _decision.set(None)


@contextlib.contextmanager
def replica_reads(allowed: bool = True) -> Iterator[None]:
    """Within the block, the ORM's reads may go to a replica (outside transactions)."""
    tokens = (_reads_allowed.set(allowed), _writer_key.set(None), _decision.set(None))
    try:
        yield
    finally:
        _decision.reset(tokens[2])
        _writer_key.reset(tokens[1])
        _reads_allowed.reset(tokens[0])


# --- read-your-own-writes -----------------------------------------------------------------


def _sticky_seconds() -> float:
    return float(settings.MEMORY_REPLICA_STICKY_SECONDS)


def _marker(key_id: int) -> Callable[[], None]:
    """The on-commit callback that remembers a key's write (one per key per transaction)."""

    def mark_key_written() -> None:
        mark_written(key_id)

    mark_key_written.replica_key = key_id  # type: ignore[attr-defined]
    return mark_key_written


def note_write(using: str = DEFAULT_DB_ALIAS) -> None:
    """The calling code writes on `using` (the primary): once its transaction commits, the
    key of the request reads from the primary for MEMORY_REPLICA_STICKY_SECONDS."""
    key_id = _writer_key.get()
    if key_id is None or not settings.MEMORY_REPLICA_ALIASES:
        return
    _decision.set(None)
    connection = connections[using]
    if not connection.in_atomic_block:
        mark_written(key_id)  # autocommit: the write is committed already
        return
    for entry in connection.run_on_commit:  # (savepoints, callback, robust)
        if getattr(entry[1], "replica_key", None) == key_id:
            return
    transaction.on_commit(_marker(key_id), using=using, robust=True)


def mark_written(key_id: int) -> None:
    """Remember that `key_id` wrote just now, here and in the shared cache."""
    seconds = _sticky_seconds()
    with _lock:
        _recent_writers[key_id] = time.monotonic() + seconds
    caches["limits"].set(STICKY_KEY.format(key_id), 1, timeout=max(1, round(seconds)))


def wrote_recently(key_id: int) -> bool:
    """Whether `key_id` wrote within the sticky window, on this process or another."""
    with _lock:
        until = _recent_writers.get(key_id)
        if until is not None and until <= time.monotonic():
            del _recent_writers[key_id]
            until = None
    if until is not None:
        return True
    return caches["limits"].get(STICKY_KEY.format(key_id)) is not None


# --- replica health -----------------------------------------------------------------------


def replica_available(alias: str) -> bool:
    """Not marked down, or its back-off is over."""
    until = _down_until.get(alias)
    return until is None or until <= time.monotonic()


def mark_down(alias: str) -> None:
    """A connection to `alias` failed: use the primary for MEMORY_REPLICA_RETRY_SECONDS."""
    with _lock:
        _down_until[alias] = time.monotonic() + float(settings.MEMORY_REPLICA_RETRY_SECONDS)


def mark_up(alias: str) -> None:
    with _lock:
        _down_until.pop(alias, None)


LAG_SQL = """
SELECT pg_is_in_recovery(),
       CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn()
            THEN 0
            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 END
"""


def replica_lag_seconds(alias: str) -> float:
    """How far `alias` is behind its primary: 0 when it has replayed all it received, else
    the age of the last transaction it replayed. Raises if it cannot be reached."""
    with connections[alias].cursor() as cursor:
        cursor.execute(LAG_SQL)
        in_recovery, lag = cursor.fetchone()
    if not in_recovery:
        raise RuntimeError(f"{alias} is not a standby")
    return float(lag or 0.0)


def check_replicas() -> tuple[str, str]:
    """Readiness (memoryplatform/health.py): each replica's lag; a replica that is down or
    lags past MEMORY_REPLICA_MAX_LAG_SECONDS is a `warn`, since reads fall back to the
    primary and this server keeps answering."""
    details, status = [], "ok"
    for alias in replica_aliases():
        if not replica_available(alias):
            details.append(f"{alias}: down, reading the primary")
            status = "warn"
            continue
        try:
            lag = replica_lag_seconds(alias)
        except Exception as exc:  # reported; the primary answers meanwhile
            details.append(f"{alias}: {exc.__class__.__name__}")
            status = "warn"
            continue
        details.append(f"{alias}: lag {lag:.3f} s")
        if lag > float(settings.MEMORY_REPLICA_MAX_LAG_SECONDS):
            status = "warn"
    return status, "; ".join(details)


# --- the router ---------------------------------------------------------------------------


def read_alias() -> str:
    """Where the calling code's reads go now: a replica, or the primary."""
    if not _reads_allowed.get() or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    decided = _decision.get()
    if decided is None:
        decided = _choose()
        _decision.set(decided)
    if decided != DEFAULT_DB_ALIAS and not replica_available(decided):
        return DEFAULT_DB_ALIAS
    return decided


def _choose() -> str:
    key_id = _writer_key.get()
    if key_id is not None and wrote_recently(key_id):
        return DEFAULT_DB_ALIAS
    candidates = [alias for alias in replica_aliases() if replica_available(alias)]
    return random.choice(candidates) if candidates else DEFAULT_DB_ALIAS


def _shared_state(model: Any) -> bool:
    """The database cache's table (the `limits` cache without Redis: rate-limit counters,
    stream slots, these markers): what every process must agree on lives on the primary,
    and its writes are not a key's writes."""
    return model is not None and model._meta.app_label == "django_cache"


class ReplicaRouter:
    """Django's database router over the primary (`default`) and its replicas."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS if _shared_state(model) else read_alias()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        if not _shared_state(model):
            note_write(DEFAULT_DB_ALIAS)
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # one database, several copies of it

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS  # replicas follow the primary's schema


def reads_from_replica(request: Any) -> bool:
    """An API request that only reads: GET or HEAD, or a search."""
    path = request.path_info
    if not path.startswith("/api/"):
        return False
    return request.method in ("GET", "HEAD") or (
        request.method == "POST" and path.rstrip("/").endswith("/search")
    )


def _wrote(request: Any, response: Any) -> bool:
    """A request that may have written and succeeded."""
    return request.method not in ("GET", "HEAD", "OPTIONS") and response.status_code < 400


class ReplicaReadsMiddleware:
    """Opens each request's routing context: whether its reads may go to a replica, and
    (once authentication sets it) whose writes it makes. Async requests (the event stream)
    read the primary."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if iscoroutinefunction(self):
            return self.__acall__(request)
        reads = reads_from_replica(request)
        with replica_reads(reads):
            response = self.get_response(request)
            key_id = _writer_key.get()
            if not reads and key_id is not None and _wrote(request, response):
                # also writes the ORM never saw (COPY, raw SQL): the request is over, committed
                mark_written(key_id)
            return response

    async def __acall__(self, request: Any) -> Any:
        with replica_reads(False):
            return await self.get_response(request)
