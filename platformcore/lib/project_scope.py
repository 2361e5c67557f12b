"""Which project the database lets this code see: the scope behind PostgreSQL's row-level
security (platformcore/db/rls.py).

Every tenant table (each table with a `project_id`) has a policy that shows and accepts only
the rows of the project named by the session setting `app.project_id`, or every row while
`app.all_projects` is `on`. The backend sends the calling code's scope to its connection
before a statement runs (platformcore/db/postgresql/base.py), so a query that forgot its
`project=` filter still returns the caller's rows only. With no scope at all the database
shows no tenant rows: it fails closed.

The scope is a context variable, so it follows the code: a request (the middleware below
opens a scope of no project, the API key's authentication narrows it to the key's project),
an MCP tool call (`mcpserver.tools.call`), work handed to another thread (`carrying_scope`),
an async task. The ways in:

- `project_scope(project_id)`: one project, as a request, a tool call, a per-project job.
- `all_projects(reason)`: every project, for maintenance that must span them (a job over
  every project's rows, an operator's command, the API-key lookup that finds the project).
  Each entry is logged with its reason on the `memoryplatform.rls` logger: the audited path.
- `no_project()`: nothing, what a request is before its key is known.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, ParamSpec, TypeVar

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

logger = logging.getLogger("memoryplatform.rls")

P = ParamSpec("P")
T = TypeVar("T")


class _AllProjects:
    def __repr__(self) -> str:
        return "ALL_PROJECTS"


ALL_PROJECTS: Final = _AllProjects()
Scope = int | _AllProjects | None  # a project id, every project, or none

_scope: ContextVar[Scope] = ContextVar("memory_rls_scope", default=None)


def current_scope() -> Scope:
    """The scope the database applies to the calling code's statements."""
    return _scope.get()


@contextmanager
def scoped(scope: Scope) -> Iterator[None]:
    """Run the block under `scope`, then restore the one before."""
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


def project_scope(project_id: int) -> Any:
    """The block sees and writes the rows of one project only."""
    if isinstance(project_id, bool) or not isinstance(project_id, int):
        raise TypeError(f"project_scope takes a project id, not {project_id!r}")
    return scoped(project_id)


def no_project() -> Any:
    """The block sees no tenant row (until something narrows it to a project)."""
    return scoped(None)


@contextmanager
def all_projects(reason: str, *, routine: bool = False) -> Iterator[None]:
    """The block sees every project's rows: maintenance that must span projects. `reason` is
    logged (INFO; DEBUG for `routine` paths that run on every request, such as the API-key
    lookup), so every cross-project access names why it happened."""
    if not reason.strip():
        raise ValueError("all_projects needs a reason")
    logger.log(logging.DEBUG if routine else logging.INFO, "all projects: %s", reason)
    with scoped(ALL_PROJECTS):
        yield


def enter_project(project_id: int) -> None:
    """Narrow the current scope to one project until the enclosing scope ends (the request's,
    opened by `RowLevelSecurityMiddleware`): what API-key authentication calls once the key's
    project is known."""
    _scope.set(project_id)


def carrying_scope(work: Callable[[], T]) -> Callable[[], T]:
    """`work` bound to the caller's scope, to run on another thread (whose context is its
    own): `beside` hands its work over this way."""
    scope = _scope.get()

    def run() -> T:
        with scoped(scope):
            return work()

    return run


def across_projects(reason: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate a management command's `handle` (or a job) that works over every project:
    the whole call runs in `all_projects(reason)`."""

    def decorate(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            with all_projects(reason):
                return fn(*args, **kwargs)

        return wrapper

    return decorate


class RowLevelSecurityMiddleware:
    """Every HTTP request starts with no project: API-key authentication narrows it to the
    key's project (tenants/auth.py); a signed-in staff user of the admin sees every project,
    logged with the user and the page. The request's scope ends with it, so nothing carries
    over to the next request on the same thread or to a test around it."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if iscoroutinefunction(self):
            return self.__acall__(request)
        with scoped(None):
            if _is_staff(request):
                with all_projects(f"staff {request.user}: {request.method} {request.path}"):
                    return self.get_response(request)
            return self.get_response(request)

    async def __acall__(self, request: Any) -> Awaitable[Any]:
        with scoped(None):  # async views (the event stream) authenticate by key, never staff
            return await self.get_response(request)  # type: ignore[no-any-return,misc]


def _is_staff(request: Any) -> bool:
    """A signed-in, active staff user (set by the session middleware on non-API paths)."""
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)
