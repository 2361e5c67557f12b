"""Background jobs that outlive a database outage.

A job running while PostgreSQL restarts (a crash, a failover, an operator's restart) fails on
its next statement with a connection-level error. `survives_db_outage` wraps a task function
(every django-q2 task of the project carries it): on such an error it closes the process's
broken connections, waits with back-off until the database answers again, and runs the job
again from its start, for at most MEMORY_JOB_DB_RETRY_SECONDS after the first failure; past
that the error is raised and the job fails as before. Any other exception (a bug, bad data, a
statement timeout, a deadlock) is raised at once: only the database being away is waited out.

Running a job again from its start is safe because every job is idempotent: each commits in
transactions of its own, so the attempt that failed left either whole transactions or none,
and the next attempt skips or redoes what they did (docs/scaling.md, "Background jobs").
The job timeout (MEMORY_JOB_TIMEOUT) still bounds the whole run, waiting included.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, Error, InterfaceError, connections
from django.db.transaction import TransactionManagementError
from psycopg_pool import PoolTimeout

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

# SQLSTATEs the server sends when it goes away or is not back yet: class 08 (connection
# exception), the server shutting down or terminating the backend (pg_terminate_backend),
# a crash shutdown, and "the database system is starting up / in recovery mode".
_OUTAGE_SQLSTATES = {"57P01", "57P02", "57P03"}
FIRST_WAIT = 0.5  # seconds before the first probe; doubled up to MAX_WAIT
MAX_WAIT = 5.0
MARKER = "survives_db_outage"  # the attribute a wrapped task carries (tests check every task)
_waiting_out: ContextVar[bool] = ContextVar("survives_db_outage", default=False)


def is_db_outage(exc: BaseException) -> bool:
    """Whether `exc` means the database could not be reached or dropped the connection, rather
    than refusing a statement. A database error raised while handling such an error (the
    broken transaction's follow-up, an attempt to record the failure) counts as well."""
    if not isinstance(exc, Error | psycopg.Error | TransactionManagementError):
        return False  # not a database error at all: a bug or bad data
    return any(_is_connection_error(error) for error in _chain(exc))


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, PoolTimeout | psycopg.InterfaceError | InterfaceError):
        return True  # no connection to be had in time, or one already closed
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate  # None: libpq's own (refused, closed unexpectedly, reset)
        return state is None or state.startswith("08") or state in _OUTAGE_SQLSTATES
    return False


def survives_db_outage(fn: Callable[P, T]) -> Callable[P, T]:
    """Decorate a background job: run it again once the database is back when it failed
    because the database went away (see the module's docstring)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        if _waiting_out.get():  # a job calling another: the outer one retries, once
            return fn(*args, **kwargs)
        token = _waiting_out.set(True)
        try:
            return _run(fn, *args, **kwargs)
        finally:
            _waiting_out.reset(token)

    setattr(wrapper, MARKER, True)
    return wrapper


def _run(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    deadline: float | None = None  # set at the first failure
    attempt = 1
    while True:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if not is_db_outage(exc) or _in_callers_transaction():
                raise
            now = time.monotonic()
            if deadline is None:
                deadline = now + float(settings.MEMORY_JOB_DB_RETRY_SECONDS)
            name, reason = fn.__qualname__, _first_line(exc)
            if now >= deadline:
                logger.error("job %s: the database is still unreachable (%s)", name, reason)
                close_connections()  # broken: the worker's next job opens fresh ones
                raise
            logger.warning(
                "job %s, attempt %d: the database is unreachable (%s); waiting for it",
                name,
                attempt,
                reason,
            )
            if not wait_for_database(deadline):
                logger.error("job %s: the database did not come back in time", name)
                raise
            attempt += 1
            logger.warning("job %s: the database is back, attempt %d", name, attempt)


def wait_for_database(deadline: float, alias: str = DEFAULT_DB_ALIAS) -> bool:
    """Drop this thread's connections (broken ones are never reused), then probe the
    database with back-off until it answers or `deadline` (time.monotonic()) passes."""
    wait = FIRST_WAIT
    while True:
        close_connections()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(wait, remaining))
        wait = min(wait * 2, MAX_WAIT)
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute("SELECT 1")
            return True
        except Exception as exc:
            if not is_db_outage(exc):
                raise
            logger.debug("database still unreachable: %s", _first_line(exc))


def close_connections() -> None:
    """Close every connection this thread opened, quietly: a broken one may raise."""
    for connection in connections.all(initialized_only=True):
        with contextlib.suppress(Exception):
            connection.close()


def _in_callers_transaction() -> bool:
    """A job called inside a transaction (jobs run synchronously in tests, a caller's
    atomic block) cannot be run again: the transaction it belonged to is lost."""
    return any(c.in_atomic_block for c in connections.all(initialized_only=True))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
