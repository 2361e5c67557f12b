"""Work a request leaves for after its answer: run once the response is on its way.

Some of a write's work changes nothing its caller reads back in the answer or in the next
read of the memory: the knowledge graph's extraction from a new memory, the live events, the
consolidation counter. An API request runs that work after its response has been handed to
the server, on the same thread and database connection, before the thread serves another
request (`response.close()`, which the server calls once the response is sent:
platformcore/lib/asgi_http.py), so the caller's wait no longer includes it.

- `after_response(work)`: inside a request, queued for after the response; anywhere else (a
  job, a command, an MCP tool over stdio) run at once.
- `after_commit_and_response(work)`: once the current transaction commits, then as above.
- `with answered_with_it():` work registered in the block runs at once, for an answer that
  reads what that work writes (mem0's `add` with `enable_graph` answers with the relations).

Queued work runs in the project scope (row-level security) it was queued in; a failure is
logged and never reaches the client, who has its answer already. Django's test client closes
every response before it returns, so a test sees the work done, as a client sees it a
moment after the answer. A server stopped normally finishes it (the request's thread runs
it before the request ends); a process killed between the answer and the work loses it, as
it loses on-commit work killed between the commit and the callbacks: only work whose loss
costs something derived from a memory (its graph links, an event), never the memory, belongs
here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.db import transaction

from platformcore.lib.project_scope import carrying_scope

logger = logging.getLogger(__name__)

_queue: ContextVar[list[Callable[[], Any]] | None] = ContextVar("after_response", default=None)


def collecting() -> bool:
    """Whether the calling code serves a request whose response will run queued work."""
    return _queue.get() is not None


def after_response(work: Callable[[], Any]) -> None:
    """Run `work` after the current request's response is sent, or now outside a request."""
    queue = _queue.get()
    if queue is None:
        work()
        return
    queue.append(carrying_scope(work))


@contextmanager
def answered_with_it() -> Iterator[None]:
    """Within the block, work is done at once (inline), not after the response: the caller's
    answer reads what it writes."""
    token = _queue.set(None)
    try:
        yield
    finally:
        _queue.reset(token)


def after_commit_and_response(work: Callable[[], Any], using: str | None = None) -> None:
    """Run `work` once the current transaction commits, after the response when in a request
    (never if the transaction rolls back)."""
    transaction.on_commit(lambda: after_response(work), using=using)


def _run(queue: list[Callable[[], Any]]) -> None:
    """The queued work in order; what it queues in turn (the events of the graph changes it
    commits) runs after everything queued before it."""
    token = _queue.set(queue)
    try:
        while queue:
            work = queue.pop(0)
            try:
                work()
            except Exception:  # the client has its answer: log, and go on with the rest
                logger.exception("work after the response failed: %r", work)
    finally:
        _queue.reset(token)


class AfterResponseMiddleware:
    """Collects a sync request's after-response work and hands it to the response, whose
    `close()` runs it (Django calls closers before `request_finished`, which returns the
    database connection). Async requests (the event stream) queue nothing: work registered
    there runs at once."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if self._async:
            return self.get_response(request)  # a coroutine: awaited by the caller
        queue: list[Callable[[], Any]] = []
        token = _queue.set(queue)
        try:
            response = self.get_response(request)
        except BaseException:
            _queue.reset(token)
            _run(queue)  # no response to carry it: now, so nothing is lost
            raise
        _queue.reset(token)
        if queue:
            response._resource_closers.append(lambda: _run(queue))
        return response
