"""Django's HTTP under ASGI with one thread hop per request, on long-lived threads.

Django's `ASGIHandler` runs a sync view like this: a new thread for every request (its
`ThreadSensitiveContext`, started and joined per request), a hop to a thread for the
`request_started` receivers, one for the view, one for `response.close()`, and a second task
listening for a disconnect. On two cores that makes an empty search through ASGI about half
as slow again as the same view under WSGI.

`ThreadedHTTPHandler` serves sync views the way a threaded WSGI server does: the body is read
in the event loop, then a single hop to one of `threads` long-lived threads runs the whole
sync request (`request_started`, middleware, view, sending the response back through the
event loop, `close()` and `request_finished`, which hands the thread's database connection
back to the pool). asgiref's thread-locals are set as for any `sync_to_async` hop, so
`async_to_sync` inside a view (events sent to the channel layer) still runs on the server's
event loop. Async views (the SSE event stream, which lives as long as its client) go to
Django's own handler: a stream must not hold one of the threads.

Overload is shed, not queued without end: a request that finds `queue_limit` requests already
waiting for a thread, or that waited `queue_timeout` seconds for one, is answered `503` with
`Retry-After` (a JSON error body as every API error) without running its view. With the
connections sized to the threads (platformcore/lib/db_threads.py) a request that has a
thread always gets a connection, so the wait for a thread is the only queue.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import FileResponse, JsonResponse
from django.urls import Resolver404, ResolverMatch, get_resolver, set_script_prefix

from platformcore.lib.db_threads import executor_with_connections
from platformcore.lib.work_budget import ProjectBusy, WorkBudget, credentials


class ThreadedHTTPHandler(ASGIHandler):
    """ASGI callable for `http` scopes; see the module docstring."""

    def __init__(
        self,
        *,
        threads: int,
        queue_limit: int = 200,
        queue_timeout: float = 5.0,
        budget: WorkBudget | None = None,
        heavy_routes: frozenset[str] = frozenset(),
        heavy_threads: int = 2,
    ) -> None:
        BaseHandler.__init__(self)
        self._budget = budget
        self._heavy_routes = heavy_routes
        # expensive requests run on threads of their own, each keeping to one core: however
        # many projects send them, the request threads stay free for everything else
        self._heavy_executor = executor_with_connections(
            heavy_threads, "http-heavy", serves_requests=True, frugal=True
        )
        self.load_middleware(is_async=False)  # the chain runs in the request's thread
        self._executor = executor_with_connections(threads, "http", serves_requests=True)
        self._django = ASGIHandler()  # async views
        self._queue_limit = queue_limit
        self._queue_timeout = queue_timeout
        self._waiting = 0  # requests read and waiting for a thread
        self._waiting_lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        match = self._resolve(scope)
        if match is not None and iscoroutinefunction(match.func):
            await self._django(scope, receive, send)
            return
        if self._waiting >= self._queue_limit:
            await self.send_response(overloaded("too many requests are waiting"), send)
            return
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            lane = self._heavy_lane(scope, match)
            if lane is None or self._budget is None:
                await self._run(scope, body_file, send)
                return
            try:
                async with self._budget.slot(lane):  # waits here, holding no thread
                    await self._run(scope, body_file, send, self._heavy_executor)
            except ProjectBusy as busy:
                await self.send_response(project_busy(busy, self._budget), send)
        finally:
            body_file.close()

    async def _run(
        self, scope: dict[str, Any], body_file: Any, send: Any, executor: Any = None
    ) -> None:
        with self._waiting_lock:
            self._waiting += 1
        executor = executor or self._executor
        serve = sync_to_async(self._serve, thread_sensitive=False, executor=executor)
        await serve(scope, body_file, send, time.monotonic())

    def _resolve(self, scope: dict[str, Any]) -> ResolverMatch | None:
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        try:
            return get_resolver().resolve(path)
        except Resolver404:
            return None

    def _heavy_lane(self, scope: dict[str, Any], match: ResolverMatch | None) -> str | None:
        """The budget lane of an expensive request (a write to a heavy route), else None."""
        if match is None or match.view_name not in self._heavy_routes:
            return None
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            return None
        headers = dict(scope.get("headers") or [])
        raw = _credential(headers.get(b"authorization"), headers.get(b"x-api-key"))
        return credentials.lane_of(raw) if raw else None

    def _serve(self, scope: dict[str, Any], body_file: Any, send: Any, queued_at: float) -> None:
        with self._waiting_lock:
            self._waiting -= 1
        if time.monotonic() - queued_at > self._queue_timeout:
            response = overloaded(f"no thread was free for {self._queue_timeout:g} s")
            async_to_sync(self.send_response)(response, send)
            return
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):  # as Django's: the server does the chunking
                response.block_size = self.chunk_size
        try:
            async_to_sync(self.send_response)(response, send)
        finally:
            response.close()  # request_finished: the connection goes back to the pool


RETRY_AFTER_SECONDS = 1
BUSY_RETRY_AFTER_SECONDS = 2


def _credential(authorization: bytes | None, x_api_key: bytes | None) -> str | None:
    """The bearer credential as API-key authentication reads it (tenants/auth.py)."""
    if x_api_key:
        return x_api_key.decode("latin-1").strip() or None
    scheme, _, token = (authorization or b"").decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() in ("bearer", "token") else None


def project_busy(busy: ProjectBusy, budget: WorkBudget) -> JsonResponse:
    """429 for one project only: its expensive requests already fill its budget."""
    why = f"waited {budget.wait:g} s for one" if busy.waited else f"{budget.queue} already wait"
    message = (
        f"This project already runs {budget.slots} expensive request(s) at once and {why}; "
        f"retry after {BUSY_RETRY_AFTER_SECONDS} s."
    )
    response = JsonResponse(
        {"error": {"code": "project_busy", "message": message, "fields": {}}}, status=429
    )
    response["Retry-After"] = str(BUSY_RETRY_AFTER_SECONDS)
    return response


def overloaded(why: str) -> JsonResponse:
    """503 with Retry-After: the server is busy, the request was not run; try again soon."""
    message = f"The server is overloaded ({why}); retry after {RETRY_AFTER_SECONDS} s."
    response = JsonResponse(
        {"error": {"code": "overloaded", "message": message, "fields": {}}}, status=503
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
