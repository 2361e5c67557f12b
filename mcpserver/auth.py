"""Who is calling: the API key of the current MCP request, the scope it needs, and the agent
it acts as (agent namespaces, tenants/namespaces.py).

HTTP requests bind the key per request (the SDK carries contextvars from the request into
the tool call); the stdio command binds its one key for the whole process. The agent is the
tool's own `agent_id` / `agentId` argument when given, else the connection's (`X-Agent-ID`
over HTTP, `--agent-id` for stdio); a profile may turn namespaces on by default (memento).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from mcp.server.mcpserver.exceptions import ToolError

from platformcore.lib.actor import Actor
from tenants.models import ApiKey
from tenants.namespaces import Namespace, namespace_for

_api_key: ContextVar[ApiKey | None] = ContextVar("mcp_api_key", default=None)
_connection_agent: ContextVar[str | None] = ContextVar("mcp_connection_agent", default=None)
_tool_agent: ContextVar[str | None] = ContextVar("mcp_tool_agent", default=None)
_profile_namespaces: ContextVar[bool | None] = ContextVar("mcp_namespaces", default=None)


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


def bind_agent(agent: str | None) -> None:
    """For the stdio process: the agent it acts as, for its whole life (`--agent-id`)."""
    _connection_agent.set(agent or None)


@contextmanager
def bound_agent(agent: str | None) -> Iterator[None]:
    """An HTTP request's agent (`X-Agent-ID`), for the tool calls it carries."""
    token = _connection_agent.set(agent or None)
    try:
        yield
    finally:
        _connection_agent.reset(token)


@contextmanager
def tool_agent(agent: str | None, *, profile_namespaces: bool | None) -> Iterator[None]:
    """A tool call naming `agent` (None: the connection's), under a profile whose default for
    agent namespaces is `profile_namespaces` (None: the project's setting alone)."""
    tokens = (_tool_agent.set(agent or None), _profile_namespaces.set(profile_namespaces))
    try:
        yield
    finally:
        _tool_agent.reset(tokens[0])
        _profile_namespaces.reset(tokens[1])


def namespace_of(api_key: ApiKey) -> Namespace | None:
    """The agent namespace the current tool call reads in (None: every namespace)."""
    agent = _tool_agent.get() or _connection_agent.get()
    return namespace_for(api_key=api_key, agent=agent, profile_default=_profile_namespaces.get())
