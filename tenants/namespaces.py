"""Agent namespaces: several agents sharing one project, each seeing its own memories and a
shared pool (Memento's row-level policy on `agent_id`, docs/security.md "Agent namespaces").

With namespaces on, a call acts as an agent: the agent it names (REST `X-Agent-ID`, else the
request's `agent_id`; an MCP tool's `agent_id` / `agentId`, else the connection's agent). It
then sees the memories of that agent and those of the shared pool (`agent_id` "default", or
no agent at all); a call that names no agent sees the shared pool only. A key with the
`admin` scope is a maintenance key: naming no agent, or "system" / "admin" (Memento's
maintenance sessions), it sees every namespace; for any other key those names are ordinary
agents. Agents are named by their callers, as in Memento: namespaces keep agents of one
project apart, projects keep tenants apart.

Whether they are on: the project's setting `agent_namespaces` (true / false), else the MCP
profile's default (on for `memento`), else MEMORY_AGENT_NAMESPACES (off). The entry point
resolves the namespace once (`namespace_for`) and puts it on the calling code
(`reading_as`); the memory selectors read it (`current_namespace`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings

from tenants.models import ApiKey, Project

SHARED_AGENT = "default"  # the shared pool, readable and writable by every agent
MAINTENANCE_AGENTS = ("system", "admin")  # Memento's names of a session that sees everything
SETTING = "agent_namespaces"


@dataclass(frozen=True)
class Namespace:
    """What a call may read: the memories of `agent` and of the shared pool."""

    agent: str


_current: ContextVar[Namespace | None] = ContextVar("memory_agent_namespace", default=None)


def namespaces_enabled(project: Project, *, profile_default: bool | None = None) -> bool:
    chosen = project.settings.get(SETTING) if isinstance(project.settings, dict) else None
    if isinstance(chosen, bool):
        return chosen
    if profile_default is not None:
        return profile_default
    return bool(settings.MEMORY_AGENT_NAMESPACES)


def namespace_for(
    *, api_key: ApiKey, agent: str | None, profile_default: bool | None = None
) -> Namespace | None:
    """The namespace a call by `api_key` naming `agent` reads in; None: every namespace."""
    if not namespaces_enabled(api_key.project, profile_default=profile_default):
        return None
    agent = (agent or "").strip() or None
    if api_key.has_scope("admin") and (agent is None or agent in MAINTENANCE_AGENTS):
        return None
    return Namespace(agent or SHARED_AGENT)


def current_namespace() -> Namespace | None:
    return _current.get()


@contextmanager
def reading_as(namespace: Namespace | None) -> Iterator[None]:
    """Run the block in `namespace` (None: unrestricted), then restore the one before."""
    token = _current.set(namespace)
    try:
        yield
    finally:
        _current.reset(token)


def enter_namespace(namespace: Namespace | None) -> None:
    """Narrow the current call's namespace until the enclosing `reading_as` ends (a REST
    request, once its key and agent are known)."""
    _current.set(namespace)
