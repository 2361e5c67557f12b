"""Which tools each profile exposes, under which names.

`standard` is our own coherent set. The others reproduce the tool names (and arguments) of
the servers in the seeds so an assistant configured for one of them works unchanged:
`sqlnative`, `memento`, `aimemory` and `kg` (the official
MCP memory server).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from mcp_types import ToolAnnotations

from mcpserver.schemas import DESTRUCTIVE, IDEMPOTENT_WRITE, READ_ONLY, WRITE
from mcpserver.tools import (
    compat,
    documents,
    episodes,
    graph,
    intelligence,
    kg,
    lifecycle,
    memory,
    prompts,
    search,
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    fn: Callable[..., Any]
    annotations: ToolAnnotations
    description: str | None = None  # default: the function's docstring


def _lifecycle(names: dict[str, str]) -> list[ToolSpec]:
    """{exposed name: function name} of lifecycle tools."""
    kinds = {
        "memory_consolidate": WRITE,
        "memory_decay_status": READ_ONLY,
        "memory_preserve": IDEMPOTENT_WRITE,
        "memory_decay_control": IDEMPOTENT_WRITE,
        "memory_set_decay_rate": IDEMPOTENT_WRITE,
        "memory_decompress": IDEMPOTENT_WRITE,
    }
    return [ToolSpec(name, getattr(lifecycle, fn), kinds[fn]) for name, fn in names.items()]


def _intelligence(names: dict[str, str]) -> list[ToolSpec]:
    kinds = {
        "memory_add": WRITE,
        "memory_context": READ_ONLY,
        "memory_reflect": WRITE,
        "reflect": WRITE,
        "context": READ_ONLY,
    }
    return [ToolSpec(name, getattr(intelligence, fn), kinds[fn]) for name, fn in names.items()]


def standard() -> list[ToolSpec]:
    return [
        ToolSpec("memory_store", memory.memory_store, WRITE),
        *_intelligence({"memory_add": "memory_add"}),
        ToolSpec("memory_search", search.memory_search, READ_ONLY),
        ToolSpec("memory_get", memory.memory_get, READ_ONLY),
        ToolSpec("memory_update", memory.memory_update, IDEMPOTENT_WRITE),
        ToolSpec("memory_delete", memory.memory_delete, DESTRUCTIVE),
        ToolSpec("memory_history", memory.memory_history, READ_ONLY),
        ToolSpec("memory_link", memory.memory_link, IDEMPOTENT_WRITE),
        ToolSpec("memory_traverse", graph.memory_traverse, READ_ONLY),
        *_intelligence({"memory_context": "memory_context", "memory_reflect": "memory_reflect"}),
        *_lifecycle(
            {
                "memory_consolidate": "memory_consolidate",
                "memory_decay_status": "memory_decay_status",
                "memory_preserve": "memory_preserve",
            }
        ),
        ToolSpec("memory_stats", memory.memory_stats, READ_ONLY),
        ToolSpec("entity_create", graph.entity_create, IDEMPOTENT_WRITE),
        ToolSpec("relation_create", graph.relation_create, IDEMPOTENT_WRITE),
        ToolSpec("entity_delete", graph.entity_delete, DESTRUCTIVE),
        ToolSpec("relation_delete", graph.relation_delete, DESTRUCTIVE),
        ToolSpec("entity_graph", graph.entity_graph, READ_ONLY),
        ToolSpec("graph_subgraph", graph.graph_subgraph_tool, READ_ONLY),
        ToolSpec("tag_list", graph.tag_list_tool, READ_ONLY),
        ToolSpec("tag_describe", graph.tag_describe, IDEMPOTENT_WRITE),
        ToolSpec("tool_feedback", memory.tool_feedback, WRITE),
        ToolSpec("document_add", documents.document_add, WRITE),
        ToolSpec("document_list", documents.document_list_tool, READ_ONLY),
        ToolSpec("document_search", documents.document_search, READ_ONLY),
        ToolSpec("document_learn", documents.document_learn_tool, WRITE),
        ToolSpec("memory_cite", documents.memory_cite, IDEMPOTENT_WRITE),
        ToolSpec("episode_start", episodes.episode_start_tool, WRITE),
        ToolSpec("episode_get", episodes.episode_get_tool, READ_ONLY),
        ToolSpec("episode_close", episodes.episode_close_tool, IDEMPOTENT_WRITE),
        ToolSpec("episode_list", episodes.episode_list_tool, READ_ONLY),
        ToolSpec("project_prompts", prompts.project_prompts, READ_ONLY),
        ToolSpec("project_prompt_set", prompts.project_prompt_set_tool, IDEMPOTENT_WRITE),
        ToolSpec("project_prompt_rollback", prompts.project_prompt_rollback_tool, WRITE),
    ]


def sqlnative() -> list[ToolSpec]:
    """The SQL-native entity memory server's ten tools."""
    return [
        ToolSpec("store_memory", compat.store_memory, WRITE),
        ToolSpec("recall_memories", compat.recall_memories, READ_ONLY),
        ToolSpec("create_entities", compat.create_entities, IDEMPOTENT_WRITE),
        ToolSpec("create_relations", compat.create_relations, IDEMPOTENT_WRITE),
        ToolSpec("delete_memories", compat.delete_memories, DESTRUCTIVE),
        ToolSpec("delete_entities", compat.delete_entities, DESTRUCTIVE),
        ToolSpec("delete_relations", compat.delete_relations, DESTRUCTIVE),
        ToolSpec("get_entity_graph", compat.get_entity_graph, READ_ONLY),
        ToolSpec("consolidate_memories", compat.consolidate_memories, WRITE),
        ToolSpec("get_memory_stats", compat.get_memory_stats, READ_ONLY),
    ]


def memento() -> list[ToolSpec]:
    """Memento MCP's eleven tools (camelCase arguments; every result `{success, ...}`)."""
    shared = [
        *_intelligence({"reflect": "reflect", "context": "context"}),
        ToolSpec("tool_feedback", memory.tool_feedback, WRITE),
        ToolSpec("memory_stats", memory.memory_stats, READ_ONLY),
        *_lifecycle({"memory_consolidate": "memory_consolidate"}),
    ]
    return [
        ToolSpec("remember", compat.remember, WRITE),
        ToolSpec("recall", compat.recall, READ_ONLY),
        ToolSpec("forget", compat.forget, DESTRUCTIVE),
        ToolSpec("link", compat.link, IDEMPOTENT_WRITE),
        ToolSpec("amend", compat.amend, IDEMPOTENT_WRITE),
        *[replace(spec, fn=compat.memento_tool(spec.fn)) for spec in shared],
        ToolSpec("graph_explore", compat.graph_explore, READ_ONLY),
    ]


def aimemory() -> list[ToolSpec]:
    """The graph and decay plan's tools on top of the standard set."""
    return [
        *standard(),
        ToolSpec("memory_graph_analysis", graph.memory_graph_analysis, READ_ONLY),
        *_lifecycle(
            {
                "memory_decay_control": "memory_decay_control",
                "memory_set_decay_rate": "memory_set_decay_rate",
                "memory_decompress": "memory_decompress",
            }
        ),
        ToolSpec(
            "memory_graph_search",
            graph.memory_traverse,
            READ_ONLY,
            "Deprecated alias of memory_traverse (same arguments and result).",
        ),
    ]


def kg_profile() -> list[ToolSpec]:
    """The official MCP memory server's nine tools."""
    return [
        ToolSpec("create_entities", kg.create_entities, IDEMPOTENT_WRITE),
        ToolSpec("create_relations", kg.create_relations, IDEMPOTENT_WRITE),
        ToolSpec("add_observations", kg.add_observations, WRITE),
        ToolSpec("delete_entities", kg.delete_entities, DESTRUCTIVE),
        ToolSpec("delete_observations", kg.delete_observations, DESTRUCTIVE),
        ToolSpec("delete_relations", kg.delete_relations, DESTRUCTIVE),
        ToolSpec("read_graph", kg.read_graph, READ_ONLY),
        ToolSpec("search_nodes", kg.search_nodes, READ_ONLY),
        ToolSpec("open_nodes", kg.open_nodes, READ_ONLY),
    ]


# Agent namespaces by default (tenants/namespaces.py), unless the project's setting says
# otherwise: Memento isolates agents by its row-level policy; the other profiles follow the
# project's setting.
PROFILE_NAMESPACES: dict[str, bool] = {"memento": True}

PROFILES: dict[str, Callable[[], list[ToolSpec]]] = {
    "standard": standard,
    "sqlnative": sqlnative,
    "memento": memento,
    "aimemory": aimemory,
    "kg": kg_profile,
}
