"""Who is calling: the API key of the current MCP request, and the scope it needs.

HTTP requests bind the key per request (the SDK carries contextvars from the request into
the tool call); the stdio command binds its one key for the whole process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from mcp.server.mcpserver.exceptions import ToolError

from memoryplatform.lib.actor import Actor
from tenants.models import ApiKey

_api_key: ContextVar[ApiKey | None] = ContextVar("mcp_api_key", default=None)


@contextmanager
def bound_api_key(api_key: ApiKey) -> Iterator[None]:
    token = _api_key.set(api_key)
    try:
        yield
    finally:
        _api_key.reset(token)


def bind_api_key(api_key: ApiKey) -> None:
    """For the stdio process: one key for its whole life."""
    _api_key.set(api_key)


def require_key(scope: str) -> ApiKey:
    """The caller's key, if it holds `scope` (read < write < admin)."""
    api_key = _api_key.get()
    if api_key is None:
        raise ToolError("unauthenticated: no API key is bound to this MCP session")
    if not api_key.has_scope(scope):
        raise ToolError(f"forbidden: this API key lacks the {scope!r} scope")
    return api_key


def actor_for(api_key: ApiKey) -> Actor:
    return Actor("key", api_key.prefix)
