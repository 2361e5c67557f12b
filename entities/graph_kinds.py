"""The kinds of node and edge of the one knowledge graph: entities, memories, episodes (here)
and documents with their chunks (registered by the documents app's `ready()`).

Nothing is copied into a graph table: a node kind names the table its rows live in, an edge
kind is a SELECT over the table that already holds the edge (relations, entity-memory
links, memory links, episode membership, a chunk's entities, a memory's citations), giving
`src`, `dst`, `weight`, `label` and `eid` (the edge's own id, when it has one) for one
project (`%(project)s`), live rows only. A walk (entities.selectors.graph) filters such a
SELECT on `src` or `dst`, which PostgreSQL pushes down onto the table's own indexes.

SQL here is ours (no input is ever formatted into it); parameters are named: `%(project)s`,
`%(as_of)s`, and a scope's `%(scope_<field>)s`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from entities.models import Entity, EntityMemory, Relation
from entities.scope import GraphScope
from memories.models import Episode, Memory, MemoryLink

# a condition on the node (alias `n`) or the edge's row for a scope, and its parameters
ScopeSQL = Callable[[GraphScope], tuple[str, dict[str, str]]]


@dataclass(frozen=True)
class NodeKind:
    name: str
    table: str
    id_type: str  # the SQL type of its ids: bigint or uuid
    label: str  # SQL on `n`: a short text naming the node
    subtype: str  # SQL on `n`: an entity's type, a memory's type, a document's media type...
    live: str = "TRUE"  # SQL on `n`: the rows that are nodes (soft-deleted memories are not)
    scope: ScopeSQL | None = None  # SQL on `n`: visible to a read in a scope


@dataclass(frozen=True)
class EdgeKind:
    name: str  # what `edge_types` names: relation, about, link, contains, mentions, cites
    source: str  # node kind
    target: str  # node kind
    sql: str
    scope: ScopeSQL | None = None  # on the edge rows themselves (relations have a scope)


NODE_KINDS: dict[str, NodeKind] = {}
EDGE_KINDS: list[EdgeKind] = []


def register_node_kind(kind: NodeKind) -> None:
    NODE_KINDS[kind.name] = kind


def register_edge_kind(kind: EdgeKind) -> None:
    if kind not in EDGE_KINDS:
        EDGE_KINDS.append(kind)


def matching_scope(alias: str) -> ScopeSQL:
    """A memory's rule: the rows matching every scope field given (as memory filters)."""

    def sql(scope: GraphScope) -> tuple[str, dict[str, str]]:
        given = {name: value for name, value in scope.as_dict().items() if value}
        parts = [f"{alias}.{name} = %(scope_{name})s" for name in given]
        return " AND ".join(parts) or "TRUE", {f"scope_{name}": v for name, v in given.items()}

    return sql


def _entity_scope(scope: GraphScope) -> tuple[str, dict[str, str]]:
    condition, params = scope.visible_sql("n")
    return condition, {k: str(v) for k, v in params.items()}


def _relation_scope(scope: GraphScope) -> tuple[str, dict[str, str]]:
    condition, params = scope.visible_sql("r")
    return condition, {k: str(v) for k, v in params.items()}


_M = Memory._meta.db_table
register_node_kind(
    NodeKind(
        "entity", Entity._meta.db_table, "bigint", "n.name", "n.entity_type", scope=_entity_scope
    )
)
register_node_kind(
    NodeKind(
        "memory",
        _M,
        "uuid",
        "left(n.content, 200)",
        "n.memory_type",
        live="n.deleted_at IS NULL",
        scope=matching_scope("n"),
    )
)
register_node_kind(
    NodeKind(
        "episode",
        Episode._meta.db_table,
        "uuid",
        "coalesce(nullif(n.name, ''), left(n.summary, 200))",
        "'episode'",
        scope=matching_scope("n"),
    )
)
register_edge_kind(
    EdgeKind(
        "relation",
        "entity",
        "entity",
        f"""SELECT r.source_id AS src, r.target_id AS dst, r.strength AS weight,
            r.relation_type AS label, r.id::text AS eid
        FROM {Relation._meta.db_table} r
        WHERE r.project_id = %(project)s AND r.valid_from <= %(as_of)s
          AND (r.valid_to IS NULL OR r.valid_to > %(as_of)s) AND {{scope}}""",
        scope=_relation_scope,
    )
)
register_edge_kind(
    EdgeKind(
        "about",
        "memory",
        "entity",
        f"""SELECT l.memory_id AS src, l.entity_id AS dst, l.relevance AS weight,
            'about'::text AS label, NULL::text AS eid
        FROM {EntityMemory._meta.db_table} l JOIN {_M} m ON m.id = l.memory_id
        WHERE l.project_id = %(project)s AND m.project_id = %(project)s
          AND m.deleted_at IS NULL""",
    )
)
register_edge_kind(
    EdgeKind(
        "link",
        "memory",
        "memory",
        f"""SELECT l.from_memory_id AS src, l.to_memory_id AS dst, l.strength AS weight,
            l.link_type::text AS label, l.id::text AS eid
        FROM {MemoryLink._meta.db_table} l
        JOIN {_M} a ON a.id = l.from_memory_id JOIN {_M} b ON b.id = l.to_memory_id
        WHERE l.project_id = %(project)s AND a.project_id = %(project)s
          AND b.project_id = %(project)s AND a.deleted_at IS NULL AND b.deleted_at IS NULL""",
    )
)
register_edge_kind(
    EdgeKind(
        "contains",
        "episode",
        "memory",
        f"""SELECT m.episode_id AS src, m.id AS dst, 1.0::float8 AS weight,
            'contains'::text AS label, NULL::text AS eid
        FROM {_M} m
        WHERE m.project_id = %(project)s AND m.episode_id IS NOT NULL
          AND m.deleted_at IS NULL""",
    )
)

__all__ = [
    "EDGE_KINDS",
    "NODE_KINDS",
    "EdgeKind",
    "NodeKind",
    "matching_scope",
    "register_edge_kind",
    "register_node_kind",
]
