"""Resources (project stats, a memory by id) and the prompt that opens a session."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from analytics.selectors import memory_stats
from mcpserver.tools import call
from mcpserver.tools.memory import memory_out


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
