"""Which tools each profile exposes, under which names.

`standard` is our own coherent set. The others reproduce the tool names (and arguments) of
the servers in the seeds so an assistant configured for one of them works unchanged:
`sqlnative` (seed 000), `memento` (seed 002), `aimemory` (seed 001) and `kg` (the official
MCP memory server). A capability whose service has not landed is simply absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_types import ToolAnnotations

from mcpserver.schemas import DESTRUCTIVE, IDEMPOTENT_WRITE, READ_ONLY, WRITE
from mcpserver.tools import memory


@dataclass(frozen=True)
class ToolSpec:
    name: str
    fn: Callable[..., Any]
    annotations: ToolAnnotations
    description: str | None = None  # default: the function's docstring


def standard() -> list[ToolSpec]:
    return [
        ToolSpec("memory_store", memory.memory_store, WRITE),
        ToolSpec("memory_get", memory.memory_get, READ_ONLY),
        ToolSpec("memory_update", memory.memory_update, IDEMPOTENT_WRITE),
        ToolSpec("memory_delete", memory.memory_delete, DESTRUCTIVE),
        ToolSpec("memory_history", memory.memory_history, READ_ONLY),
        ToolSpec("memory_link", memory.memory_link, IDEMPOTENT_WRITE),
        ToolSpec("memory_stats", memory.memory_stats, READ_ONLY),
        ToolSpec("tool_feedback", memory.tool_feedback, WRITE),
    ]


PROFILES: dict[str, Callable[[], list[ToolSpec]]] = {
    "standard": standard,
}
