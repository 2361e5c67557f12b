"""The MCP server factory: one `MCPServer` per compatibility profile.

The project is never an argument: every tool acts for the project of the API key bound to
the request (HTTP) or the process (stdio), see `mcpserver.auth`.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Literal, cast

from django.conf import settings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from mcpserver.auth import tool_agent
from mcpserver.profiles import PROFILE_NAMESPACES, PROFILES
from mcpserver.resources import register_prompts, register_resources
from platformcore.lib import json_input

INSTRUCTIONS = """\
Memory Platform gives you long-term memory that outlives this conversation.
- At the start of a task, load what you already know (the context tool or prompt, or a search).
- Before answering questions about the user, their projects or past decisions, search memory.
- Store durable knowledge as soon as you learn it: preferences, decisions (with the reason),
  errors and how they were fixed, procedures, facts about people and systems. One statement
  per memory, self-contained, no secrets.
- When something you stored turns out wrong or outdated, update it instead of storing a
  contradiction; link related memories (caused_by, resolved_by, supersedes...).
- At the end of a session, reflect: summarise decisions, resolved errors, new procedures and
  open questions so the next session starts informed.
- Rate tools with tool_feedback when results were irrelevant or insufficient.
"""

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class PlatformServer(MCPServer):
    """The SDK's server, with every tool call's arguments held to the rules of all JSON input
    (platformcore.lib.json_input: depth, NUL, numbers) before any tool sees them."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        try:
            json_input.check_value(arguments)
        except json_input.JsonInputError as exc:
            raise ToolError(f"invalid: {exc}") from exc
        return await super().call_tool(name, arguments, context)


def build_server(profile: str) -> MCPServer:
    """A server exposing the tools of `profile` (standard, sqlnative, memento, aimemory, kg)."""
    server = PlatformServer(
        name="memory-platform",
        title="Memory Platform",
        instructions=INSTRUCTIONS,
        version="1.0.0",
        log_level=cast(LogLevel, settings.LOG_LEVEL if settings.LOG_LEVEL in _LEVELS else "INFO"),
    )
    namespaces = PROFILE_NAMESPACES.get(profile)
    for spec in PROFILES[profile]():
        server.add_tool(
            acting_agent(spec.fn, profile_namespaces=namespaces),
            name=spec.name,
            description=spec.description,
            annotations=spec.annotations,
            structured_output=True,
        )
    register_resources(server)
    register_prompts(server)
    return server


AGENT_ARGUMENTS = ("agent_id", "agentId")


def acting_agent(
    tool: Callable[..., Awaitable[Any]], *, profile_namespaces: bool | None
) -> Callable[..., Awaitable[Any]]:
    """`tool`, calling as the agent its `agent_id` / `agentId` argument names (or the
    connection's), under the profile's default for agent namespaces (mcpserver/auth.py)."""
    signature = inspect.signature(tool, eval_str=True)
    argument = next((name for name in AGENT_ARGUMENTS if name in signature.parameters), None)

    @functools.wraps(tool)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        agent = kwargs.get(argument) if argument else None
        with tool_agent(agent, profile_namespaces=profile_namespaces):
            return await tool(*args, **kwargs)

    # the SDK reads the signature and type hints for the schemas: the tool's own
    wrapper.__signature__ = signature  # type: ignore[attr-defined]
    wrapper.__annotations__ = typing.get_type_hints(tool, include_extras=True)
    return wrapper


@functools.cache
def configured_server() -> MCPServer:
    """The server of the configured profile (MEMORY_MCP_PROFILE), one per process."""
    return build_server(settings.MEMORY_MCP_PROFILE)
