"""Run a read beside the caller's own: a second thread with its own database connection.

`beside(work)` starts `work` on one of a few long-lived threads, where Django gives it a
connection of its own (from the pool under ASGI, or a persistent one), so two statements run
on two PostgreSQL backends at once: hybrid search runs its semantic statement while the
caller runs the keyword one. The connection is handed back (or kept within CONN_MAX_AGE)
when the work ends, as Django does at the end of a request.

Another connection cannot see the caller's uncommitted writes, so inside a transaction
(`atomic`, a test's rollback-wrapped database) the work runs inline, in the caller's thread
and transaction: the result is the same, only not concurrent.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections

T = TypeVar("T")
WORKERS = 4  # concurrent requests each borrow one while their own statement runs
_executors: dict[int, ThreadPoolExecutor] = {}  # beside's, by process (a fork starts its own)
_with_connections: list[tuple[int, ThreadPoolExecutor, int]] = []  # (pid, executor, workers)
_lock = threading.RLock()


def beside(work: Callable[[], T], *, using: str = DEFAULT_DB_ALIAS) -> Future[T]:
    """`work()` on another connection while the caller goes on; `.result()` returns or
    raises what it did. Inline (already finished) inside a transaction."""
    if connections[using].in_atomic_block:
        done: Future[T] = Future()
        try:
            done.set_result(work())
        except Exception as exc:  # delivered by .result(), as from a thread
            done.set_exception(exc)
        return done
    return _executor().submit(with_connection, work)


def executor_with_connections(workers: int, name: str) -> ThreadPoolExecutor:
    """A pool of long-lived threads that use Django's connections (each thread its own), known
    to `close_connections`."""
    executor = ThreadPoolExecutor(workers, thread_name_prefix=name)
    with _lock:
        _with_connections.append((os.getpid(), executor, workers))
    return executor


def close_connections(timeout: float = 10.0) -> None:
    """Close the database connections that the threads of this process's pools hold (a test
    run does this before dropping its database; a process that exits needs nothing). Each
    worker closes its own: one task per worker, held at a barrier so that no worker takes
    two (and every worker is started)."""
    with _lock:
        pools = [(ex, workers) for pid, ex, workers in _with_connections if pid == os.getpid()]
    for executor, workers in pools:
        barrier = threading.Barrier(workers, timeout=timeout)

        def close(barrier: threading.Barrier = barrier) -> None:
            connections.close_all()
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()

        for future in [executor.submit(close) for _ in range(workers)]:
            future.result()


def _executor() -> ThreadPoolExecutor:
    pid = os.getpid()
    with _lock:
        if pid not in _executors:
            _executors.clear()
            _executors[pid] = executor_with_connections(WORKERS, "db-beside")
        return _executors[pid]


def with_connection(work: Callable[[], T]) -> T:
    """`work()` on a pool thread, with the thread's connection checked before and handed back
    (or kept within CONN_MAX_AGE) after, as Django does around a request."""
    close_old_connections()  # one the server closed, or past CONN_MAX_AGE, is replaced
    try:
        return work()
    finally:
        close_old_connections()  # pooled: back to the pool; persistent: kept for a while
