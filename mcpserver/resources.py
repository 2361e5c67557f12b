"""Resources (project stats, a memory by id) and the prompt that opens a session."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from analytics.selectors import memory_stats
from mcpserver.tools import call
from mcpserver.tools.intelligence import scope_or_default
from mcpserver.tools.memory import memory_out
from memories.services.session import session_context


async def _read(fn: Any) -> str:
    try:
        return json.dumps(await call("read", fn), default=str)
    except ToolError as exc:
        raise ResourceError(str(exc)) from exc


def register_resources(server: MCPServer) -> None:
    @server.resource(
        "memory://stats",
        name="project-stats",
        description="Statistics of this project's memory (same as the memory_stats tool).",
        mime_type="application/json",
    )
    async def project_stats() -> str:
        return await _read(lambda key: memory_stats(project=key.project))

    @server.resource(
        "memory://memories/{memory_id}",
        name="memory",
        description="One memory by id, as JSON.",
        mime_type="application/json",
    )
    async def memory_by_id(memory_id: str) -> str:
        return await _read(lambda key: memory_out(key.project, memory_id))


def register_prompts(server: MCPServer) -> None:
    @server.prompt(
        name="session_context",
        description="Start a session informed: loads core memory (preferences, errors, "
        "procedures) and, with session_id, that session's memories, within a token budget.",
    )
    async def session_context_prompt(
        user_id: str = "",
        agent_id: str = "",
        session_id: str = "",
        token_budget: str = "2000",
    ) -> str:
        if not token_budget.isdigit() or int(token_budget) < 1:
            raise ValueError("token_budget must be a positive integer")

        def load(key: Any) -> str:
            context = session_context(
                project=key.project,
                scope=scope_or_default(user_id, agent_id, None),
                token_budget=int(token_budget),
                session_id=session_id or None,
            )
            return context.as_text()

        text = await call("read", load)
        if not text:
            return "No stored memories yet for this scope. Store what you learn as you go."
        return (
            "Here is what you already know from earlier sessions (long-term memory). "
            "Use it, and keep it up to date with the memory tools.\n\n" + text
        )
