"""Run a read beside the caller's own: a second thread with its own database connection.

`beside(work)` starts `work` on one of a few long-lived threads, where Django gives it a
connection of its own (from the pool under ASGI, or a persistent one), so two statements run
on two PostgreSQL backends at once: hybrid search runs its semantic statement while the
caller runs the keyword one. The connection is handed back (or kept within CONN_MAX_AGE)
when the work ends, as Django does at the end of a request. The work runs in the caller's
row-level security scope (platformcore/lib/project_scope.py): it sees the caller's project only.

Another connection cannot see the caller's uncommitted writes, so inside a transaction
(`atomic`, a test's rollback-wrapped database) the work runs inline, in the caller's thread
and transaction: the result is the same, only not concurrent. When every `beside` thread is
busy (a loaded server) the work also runs inline: on a machine whose cores are all working,
waiting for a free thread would only add the wait to the request.

Connections and threads: no thread ever waits for a connection held by a thread that waits
for it. Each pool of threads made here (`executor_with_connections`: HTTP requests, `beside`,
reinforcement, MCP tool calls, async entry points) is a *role*, and under a connection pool
(MEMORY_DB_POOL) each role takes its connections from a pool of its own with as many
connections as the role has threads (platformcore/db/postgresql/base.py). A thread holds at
most one connection per database, so a role's thread always finds one free: a request that
holds its connection while its `beside` work runs can never starve the `beside` threads, as
it did with one shared pool (ten hybrid searches each holding one of the ten connections and
waiting for a second: a deadlock broken only by the pool's 10 s timeout). Threads of no role
(the main thread, a per-request thread of Django's async views, Channels' database threads)
share the pool of MEMORY_DB_POOL_SIZE, take a connection for a short call and hand it back.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections

from platformcore.lib.project_scope import carrying_scope

T = TypeVar("T")
WORKERS = 4  # concurrent requests each borrow one while their own statement runs
_executors: dict[int, ThreadPoolExecutor] = {}  # beside's, by process (a fork starts its own)
_with_connections: list[tuple[int, ThreadPoolExecutor, int]] = []  # (pid, executor, workers)
_lock = threading.RLock()
_idle: dict[int, threading.BoundedSemaphore] = {}  # free beside threads, by process
_local = threading.local()  # the role of this thread, set when a role's thread starts
_roles = itertools.count(1)


@dataclass(frozen=True)
class Role:
    """A pool of threads that use the database: `threads` of them, named `name`. The
    connections of a role that `serves_requests` (HTTP requests, MCP tool calls, the key checks
    of streams, and `beside` in a process that serves requests) cancel statements running
    longer than MEMORY_STATEMENT_TIMEOUT_MS; jobs' and commands' threads have no such limit."""

    name: str
    threads: int
    serves_requests: bool = False
    frugal: bool = False  # its work keeps to one core (expensive requests: batch embeddings)


def thread_role() -> Role | None:
    """The role of the calling thread, or None for a thread of no role."""
    return getattr(_local, "role", None)


def frugal_thread() -> bool:
    """Whether the calling thread's work should keep to one core (a `frugal` role's)."""
    role = thread_role()
    return role is not None and role.frugal


FRUGAL_NICENESS = 10  # a frugal thread's CPU priority: it yields the cores to the others


def _enter_role(role: Role) -> None:
    _local.role = role
    if role.frugal and hasattr(os, "setpriority"):  # per thread on Linux: the thread's own id
        with contextlib.suppress(OSError):  # not permitted: the process's priority, then
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FRUGAL_NICENESS)


def beside(work: Callable[[], T], *, using: str = DEFAULT_DB_ALIAS) -> Future[T]:
    """`work()` on another connection while the caller goes on; `.result()` returns or
    raises what it did. Inline (already finished) inside a transaction."""
    if connections[using].in_atomic_block:
        return _inline(work)
    executor, idle = _executor()
    if thread_role() is _beside_role(executor) or not idle.acquire(blocking=False):
        return _inline(work)  # every beside thread busy (or this is one): no wait for one
    try:
        future = executor.submit(with_connection, carrying_scope(work))  # the caller's project
    except BaseException:
        idle.release()
        raise
    future.add_done_callback(lambda _: idle.release())
    return future


def _inline(work: Callable[[], T]) -> Future[T]:
    done: Future[T] = Future()
    try:
        done.set_result(work())
    except Exception as exc:  # delivered by .result(), as from a thread
        done.set_exception(exc)
    return done


def executor_with_connections(
    workers: int, name: str, *, serves_requests: bool = False, frugal: bool = False
) -> ThreadPoolExecutor:
    """A pool of long-lived threads that use Django's connections (each thread its own), known
    to `close_connections`; a role of its own (see the module docstring)."""
    role = Role(f"{name}-{next(_roles)}", workers, serves_requests, frugal)
    executor = ThreadPoolExecutor(
        workers, thread_name_prefix=name, initializer=_enter_role, initargs=(role,)
    )
    executor._memory_role = role  # type: ignore[attr-defined]
    with _lock:
        _with_connections.append((os.getpid(), executor, workers))
    return executor


def close_connections(timeout: float = 10.0) -> None:
    """Close the database connections that the threads of this process's pools hold (a test
    run does this before dropping its database; a process that exits needs nothing). Each
    worker closes its own: one task per worker, held at a barrier so that no worker takes
    two (and every worker is started)."""
    with _lock:
        _with_connections[:] = [entry for entry in _with_connections if not entry[1]._shutdown]
        pools = [(ex, workers) for pid, ex, workers in _with_connections if pid == os.getpid()]
    for executor, workers in pools:
        barrier = threading.Barrier(workers, timeout=timeout)

        def close(barrier: threading.Barrier = barrier) -> None:
            connections.close_all()
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()

        for future in [executor.submit(close) for _ in range(workers)]:
            future.result()


def _executor() -> tuple[ThreadPoolExecutor, threading.BoundedSemaphore]:
    pid = os.getpid()
    with _lock:
        if pid not in _executors:
            _executors.clear()
            _idle.clear()
            _executors[pid] = executor_with_connections(
                WORKERS, "db-beside", serves_requests=_serves_requests(pid)
            )
            _idle[pid] = threading.BoundedSemaphore(WORKERS)
        return _executors[pid], _idle[pid]


def _serves_requests(pid: int) -> bool:
    """Whether this process runs a role that serves requests (then `beside` work is a
    request's too); a job or a command runs none."""
    with _lock:
        roles = [ex._memory_role for p, ex, _ in _with_connections if p == pid]  # type: ignore[attr-defined]
    return any(role.serves_requests for role in roles)


def _beside_role(executor: ThreadPoolExecutor) -> Role:
    return executor._memory_role  # type: ignore[attr-defined,no-any-return]


def with_connection(work: Callable[[], T]) -> T:
    """`work()` on a pool thread, with the thread's connection checked before and handed back
    (or kept within CONN_MAX_AGE) after, as Django does around a request."""
    close_old_connections()  # one the server closed, or past CONN_MAX_AGE, is replaced
    try:
        return work()
    finally:
        close_old_connections()  # pooled: back to the pool; persistent: kept for a while


_async_executors: dict[int, ThreadPoolExecutor] = {}
ASYNC_WORKERS = 4  # short database calls of async entry points (key checks of streams)


async def database_call(fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` from async code (an SSE stream, a websocket, MCP's authentication) on one of
    a few threads of their own, with the connection handed back after the call: a stream that
    lives for hours holds no connection while it waits for events."""
    pid = os.getpid()
    with _lock:
        if pid not in _async_executors:
            _async_executors.clear()
            _async_executors[pid] = executor_with_connections(
                ASYNC_WORKERS, "db-async", serves_requests=True
            )
        executor = _async_executors[pid]

    def call() -> T:
        return with_connection(lambda: fn(*args))

    return await sync_to_async(call, thread_sensitive=False, executor=executor)()
