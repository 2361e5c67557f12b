"""Django's PostgreSQL backend, loading timestamps with psycopg's C loader, with a connection
pool per role of thread, and checking pooled connections without a round trip.

Django registers its own `timestamptz` loader on every connection: psycopg's pure-Python
loader with the time zone replaced after parsing, an order of magnitude slower than
psycopg's C loader. A search loads ~140 timestamps (its candidates' creation times and the
page's rows), a page of 100 memories 400: milliseconds of Python a request, holding the GIL.
With Django's connection time zone UTC (USE_TZ, no database TIME_ZONE: what Memory Platform
runs with) the C loader gives the same values, so it is used; any other setting keeps
Django's loader.

With a connection pool and CONN_HEALTH_CHECKS, Django has psycopg_pool check every connection
it hands out with an empty query: one more round trip per checkout, and a search checks out
two (the request's and hybrid search's second thread), each waiting for PostgreSQL to be
scheduled on a busy 2-core machine (4% of a search server's samples). A connection
the server has closed (terminated, restarted, crashed) has something to read on its socket
(the server's goodbye, or end-of-file): `check_pooled_connection` asks the socket, and runs
the empty query only then. A network that vanishes without a word is caught by neither check
any sooner (the empty query would wait for TCP to give up), and psycopg_pool still replaces
idle connections after `max_idle` and every connection after `max_lifetime`.

Django keeps one pool per database alias. Here each role of thread (platformcore.lib.
db_threads: the HTTP request threads, hybrid search's `beside` threads, the reinforcement
thread, MCP tool calls) has a pool of its own, as large as the role has threads, so a thread
never waits for a connection that a thread of another role holds while it waits for this one
(the nested acquisition that froze a server under 16 concurrent hybrid searches). Threads of
no role share the alias's pool of MEMORY_DB_POOL_SIZE with its timeout. A role that serves
requests opens its connections with `statement_timeout` (MEMORY_STATEMENT_TIMEOUT_MS, sent in
the startup options: no round trip), so one tenant's runaway statement is cancelled instead of
holding a request thread and a backend; jobs and commands keep the server's default (none).

Row-level security (platformcore/db/rls.py): with an APP_ROLE in the database settings
(MEMORY_ROW_LEVEL_SECURITY), connections act as that role from their startup options, except
the owner's (`migrate`, `flush`, creating and dropping test databases). Before a statement,
the connection is given the calling code's scope (platformcore/lib/project_scope.py) if it differs
from the one it last received: one `set_config` round trip when the scope changes (a request
twice: the key lookup across projects, then its project), none otherwise. A rollback may undo
a setting made inside the transaction, and a pooled connection may come from another thread,
so both make the connection's scope unknown, and the next statement sends it again. A
connection going back to a pool has its scope cleared.

A COMMIT of a transaction that an error aborted raises (InFailedSqlTransaction) instead of
what PostgreSQL and psycopg do with it: PostgreSQL answers it with ROLLBACK and psycopg
returns quietly, so code that caught the error and went on would answer as if its writes were
stored.

Queries grouped by a model's primary key are grouped by its table's `project_id` too
(compiler.py): a tenant table's key in the database is `(id, project_id)`.

Read replicas (platformcore/db/router.py): a replica's alias names its primary in
`REPLICA_OF`. When a connection to the replica cannot be opened (refused, timed out, or its
pool gave none within MEMORY_REPLICA_CONNECT_TIMEOUT), the replica is marked down for a short
back-off and the connection is opened on the primary instead, from a pool of its own: the
read is answered, only not by the replica. Replica connections get the same runtime role and
row-level security scope as the primary's.
"""

from __future__ import annotations

import datetime
import functools
import logging
import re
import select
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base, operations
from django.db.backends.postgresql.psycopg_any import BaseTzLoader
from psycopg.adapt import AdaptersMap
from psycopg.pq import Format
from psycopg_pool import ConnectionPool, PoolTimeout

from platformcore.db import citus, rls, router
from platformcore.lib.db_threads import thread_role
from platformcore.lib.project_scope import current_scope
from platformcore.lib.result_cache import WriteTracker

logger = logging.getLogger(__name__)

_UTC = datetime.UTC
_TIMESTAMPTZ = psycopg.adapters.types["timestamptz"].oid
_FAST_LOADER = psycopg.adapters.get_loader(_TIMESTAMPTZ, Format.TEXT)  # C with psycopg[binary]


class UtcTimestamptzLoader(BaseTzLoader):  # type: ignore[misc]
    """Django's loader (its `timezone` attribute is what Django checks per cursor) whose
    `load` is psycopg's own, bound per instance. psycopg's loader returns values in the
    session's time zone: UTC as Django sets it; were a session switched to another zone,
    values are converted to UTC (the same instant), which Django's loader would not do."""

    timezone = _UTC

    def __init__(self, oid: int, context: Any = None) -> None:
        super().__init__(oid, context)
        fast = _FAST_LOADER(oid, context).load
        if fast(b"2000-01-01 00:00:00+00").tzinfo is _UTC:
            self.load = fast  # type: ignore[method-assign]
        else:
            self._fast = fast
            self.load = self._to_utc  # type: ignore[method-assign]

    def _to_utc(self, data: Any) -> datetime.datetime:
        return self._fast(data).astimezone(_UTC)


@functools.cache
def _with_fast_timestamps(template: AdaptersMap) -> AdaptersMap:
    adapters = AdaptersMap(template)
    adapters.register_loader("timestamptz", UtcTimestamptzLoader)
    return adapters


def check_pooled_connection(conn: psycopg.Connection) -> None:
    """Return quietly if `conn` looks usable; raise (the pool then discards it) if not."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    if _readable(conn.fileno()):  # the server said something unasked: most likely goodbye
        ConnectionPool.check_connection(conn)


def _readable(fd: int) -> bool:
    """Whether `fd` has something to read, without waiting (poll: a server process may hold
    more than the 1,024 descriptors select() can watch)."""
    if not hasattr(select, "poll"):  # not on Linux or macOS
        return bool(select.select([fd], [], [], 0)[0])
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


_FAILED = psycopg.pq.TransactionStatus.INERROR
_IDLE = psycopg.pq.TransactionStatus.IDLE
_UNKNOWN = object()  # a connection whose scope is not known: the next statement sends it
# statements PostgreSQL refuses inside a transaction block: run as they come, without scope
# (schema changes and maintenance, which row-level security does not look at)
_NO_TRANSACTION = re.compile(
    r"^\s*(VACUUM|CHECKPOINT|ALTER\s+SYSTEM|(CREATE|DROP)\s+DATABASE)\b|\bCONCURRENTLY\b", re.I
)
_citus_databases: dict[tuple[Any, ...], bool] = {}  # is it a Citus coordinator


def _clear_scope(conn: psycopg.Connection) -> None:
    """psycopg_pool's reset: a connection goes back to its pool with no scope."""
    conn.execute(rls.RESET_STATEMENT)
    if not conn.autocommit:
        conn.commit()


class DatabaseOperations(operations.DatabaseOperations):
    # grouping by a tenant table's whole key, (id, project_id): compiler.py
    compiler_module = "platformcore.db.postgresql.compiler"


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
    as_owner = False  # set by commands that must run as the owner (migrate, flush)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scope_sent: Any = _UNKNOWN
        # every write a search answer could depend on moves the search cache's generation
        self.writes = WriteTracker()
        self.execute_wrappers.append(self._note_write)
        self.execute_wrappers.append(self._citus_scoped_statement)

    def _note_write(self, execute: Any, sql: Any, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if isinstance(sql, str) and not self.as_owner:  # the owner migrates, flushes
            self.writes.note(sql, current_scope(), self)
        return result

    def _commit(self) -> None:
        if self.connection is not None and self.connection.info.transaction_status == _FAILED:
            # PostgreSQL answers the COMMIT of a transaction an error aborted with ROLLBACK,
            # and psycopg does not raise: code that swallowed the error would go on as if
            # its writes were stored. Raise, as the error would have (atomic rolls back).
            with self.wrap_database_errors:
                raise psycopg.errors.InFailedSqlTransaction(
                    "the transaction was aborted by an earlier error and cannot commit"
                )
        super()._commit()  # type: ignore[misc]
        self.writes.transaction_ended()
        if self._scope_is_local:
            self._scope_sent = _UNKNOWN  # SET LOCAL ends with its transaction

    @property
    def row_level_security(self) -> bool:
        return bool(self.settings_dict.get("APP_ROLE")) and self.alias != NO_DB_ALIAS

    @property
    def app_role(self) -> str | None:
        """The role this connection acts as (row-level security), or None: the owner's."""
        if self.as_owner or not self.row_level_security:
            return None
        return self.settings_dict["APP_ROLE"]  # type: ignore[no-any-return]

    def create_cursor(self, name: Any = None) -> Any:
        if self.row_level_security:  # the owner too: forced policies hold a non-superuser
            self._send_scope()
        return super().create_cursor(name)

    @property
    def is_citus(self) -> bool:
        """Whether the database is a Citus coordinator (asked once per process and database)."""
        if self.connection is None:
            self.ensure_connection()
        key = (self.settings_dict.get("HOST"), self.settings_dict.get("PORT"))
        key += (self.settings_dict.get("NAME"),)
        known = _citus_databases.get(key)
        if known is None:
            if self.connection.info.transaction_status == _FAILED:
                return False  # asked again once the transaction is rolled back
            with self.connection.cursor() as cursor:
                known = _citus_databases[key] = citus.is_citus(cursor)
        return known

    @property
    def _scope_is_local(self) -> bool:
        """Whether the scope goes with each transaction (a Citus coordinator: its connections
        to the workers never see a session setting) rather than on the session."""
        if not self.row_level_security or self.connection is None:
            return False
        return self.is_citus

    def _send_scope(self) -> None:
        """The calling code's scope onto the connection, when it is not there already."""
        scope = current_scope()
        if self._scope_sent is scope or self._scope_sent == scope:
            return
        if self.needs_rollback or self.connection.info.transaction_status == _FAILED:
            return  # a broken transaction: only its rollback runs, and that needs no scope
        if self._scope_is_local:
            if self.get_autocommit():
                return  # each statement is its own transaction: _citus_scoped_statement
            fresh = self.connection.info.transaction_status == _IDLE  # nothing run in it yet
            sent = self._scope_sent
            previous = None if sent is _UNKNOWN else rls.scope_values(sent)
            previous = citus.FRESH if fresh else previous
            for statement in citus.scope_statements(rls.scope_values(scope), previous):
                self.connection.execute(statement)
        else:
            sql, params = rls.scope_statement(scope)
            self.connection.execute(sql, params)
        self._scope_sent = scope

    def _citus_scoped_statement(
        self, execute: Any, sql: Any, params: Any, many: bool, context: Any
    ) -> Any:
        """On Citus, a statement run outside a transaction runs in one of its own that
        starts with the scope (SET LOCAL, which Citus forwards to the workers)."""
        raw = self.connection
        if (
            raw is None
            or not self.get_autocommit()
            or raw.info.transaction_status != _IDLE
            or not self._scope_is_local
            or (isinstance(sql, str) and _NO_TRANSACTION.search(sql))
        ):
            return execute(sql, params, many, context)
        raw.execute("BEGIN")
        try:
            for statement in citus.scope_statements(rls.scope_values(current_scope()), citus.FRESH):
                raw.execute(statement)
            result = execute(sql, params, many, context)
        except BaseException:
            if not raw.closed:
                raw.execute("ROLLBACK")
            raise
        raw.execute("COMMIT")
        return result

    def get_new_connection(self, conn_params: Any) -> Any:
        self._scope_sent = _UNKNOWN
        self._on_primary = False
        primary = self.settings_dict.get("REPLICA_OF")
        if not primary:
            return self._connect(conn_params)
        if router.replica_available(self.alias):
            try:
                connection = super().get_new_connection(conn_params)
            except (psycopg.OperationalError, PoolTimeout):
                logger.warning("replica %s unreachable: reading the primary", self.alias)
                router.mark_down(self.alias)
            else:
                router.mark_up(self.alias)
                return connection
        self._on_primary = True  # failover: this alias's reads are served by the primary
        return super().get_new_connection(self._primary_params())

    def _connect(self, conn_params: Any) -> Any:
        try:
            return super().get_new_connection(conn_params)
        except psycopg.OperationalError as exc:  # a missing runtime role: say what to run
            explained = rls.explain_connect_failure(exc, self.app_role) if self.app_role else exc
            if explained is exc:
                raise
            raise explained from exc

    def _primary_params(self) -> dict[str, Any]:
        return connections[self.settings_dict["REPLICA_OF"]].get_connection_params()

    def _rollback(self) -> None:
        super()._rollback()  # type: ignore[misc]
        self._scope_sent = _UNKNOWN
        self.writes.transaction_ended()

    def _savepoint_rollback(self, sid: str) -> None:
        super()._savepoint_rollback(sid)  # type: ignore[misc]
        self._scope_sent = _UNKNOWN
        self.writes.transaction_ended()

    @property
    def pool(self) -> Any:
        role = thread_role()
        if getattr(self, "_on_primary", False) and self.settings_dict["OPTIONS"].get("pool"):
            # a replica that is down: its reads take connections to the primary from a pool
            # of their own, so they never wait for the primary alias's connections
            size = role.threads if role is not None else int(settings.MEMORY_DB_POOL_SIZE)
            name = role.name if role is not None else "shared"
            pool = self._role_pool(f"{self.alias}:primary:{name}", size, self._primary_params())
        elif role is None or not self.settings_dict["OPTIONS"].get("pool"):
            pool = super().pool
        else:
            pool = self._role_pool(f"{self.alias}:{role.name}", role.threads)
        # Django passes psycopg_pool's own check when CONN_HEALTH_CHECKS is on: use ours
        if pool is not None and getattr(pool, "_check", None) is ConnectionPool.check_connection:
            pool._check = check_pooled_connection
        if pool is not None and self.app_role is not None:
            pool._reset = _clear_scope
        return pool

    def _role_pool(
        self, key: str, threads: int, params: dict[str, Any] | None = None
    ) -> ConnectionPool:
        """The pool of a role's threads: one connection per thread, so none ever waits."""
        pools = self._connection_pools
        if key not in pools:
            options = self.settings_dict["OPTIONS"]["pool"]
            options = {} if options is True else dict(options)
            options.update(min_size=1, max_size=threads)
            params = {**(params or self.get_connection_params()), "autocommit": True}
            check = self.settings_dict["CONN_HEALTH_CHECKS"]
            pool = ConnectionPool(
                kwargs=params,
                open=False,
                configure=self._configure_connection,
                check=check_pooled_connection if check else None,
                reset=_clear_scope if self.app_role is not None else None,
                **options,
            )
            pools.setdefault(key, pool)  # a thread that lost the race uses the winner's
        return pools[key]

    def close_pool(self) -> None:
        """Close the alias's pools, the roles' included."""
        pools = self._connection_pools
        for key in [k for k in pools if k == self.alias or k.startswith(f"{self.alias}:")]:
            pools.pop(key).close()

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        if self.timezone is _UTC and "context" in params:
            params["context"] = _with_fast_timestamps(params["context"])
        role = self.app_role
        if role is not None:  # a session default: rollbacks keep it, RESET ROLE returns to it
            params["options"] = f"{params.get('options', '')} -c role={role}".strip()
        timeout = _statement_timeout_ms()
        if timeout:  # a session default of the request roles' connections (db_threads.Role)
            params["options"] = f"{params.get('options', '')} -c statement_timeout={timeout}"
        return params


def _statement_timeout_ms() -> int:
    """MEMORY_STATEMENT_TIMEOUT_MS for a connection opened by a thread that serves requests
    (HTTP, MCP tool calls, streams' key checks), 0 (none) for jobs, commands and the rest."""
    role = thread_role()
    if role is None or not role.serves_requests or settings.MEMORY_PGBOUNCER:
        return 0  # behind PgBouncer no startup options: the database's own setting holds
    return int(settings.MEMORY_STATEMENT_TIMEOUT_MS)
