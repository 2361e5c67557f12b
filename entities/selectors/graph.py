"""One knowledge graph across kinds: entities, memories, episodes, documents and their chunks
(entities.graph_kinds), walked and exported as one.

A walk is level-synchronous, as the entity walk (traversal.py) is: one statement per level
carries the whole frontier, grouped by kind, and asks every edge kind that touches it for the
neighbours not yet visited (each edge kind's SELECT filtered on the frontier's ids, so each
branch is an index scan of the table that holds the edge), keeping the strongest-connected
`max_nodes`. Then one statement reads the reached nodes of every kind and one the edges
among them. A node is expanded once however many paths reach it.

Given a scope (user_id, agent_id, run_id), the walk passes only through nodes that scope sees:
entities and relations of its graph and the project-wide one, memories, episodes and
documents of that scope, chunks of those documents.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS
from django.utils import timezone

from entities.graph_kinds import EDGE_KINDS, NODE_KINDS, EdgeKind, NodeKind
from entities.scope import GraphScope
from entities.selectors.traversal import MAX_NODES, check_walk
from memories.selectors.search.statements import fetch_with_settings
from platformcore.lib.errors import InvalidInput, NotFound
from tenants.models import Project

EXPORT_MAX_NODES = 100_000


@dataclass(frozen=True)
class NodeRef:
    kind: str
    id: Any  # an int or a UUID, as the kind's table keys its rows

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"


@dataclass
class Node:
    kind: str
    id: Any
    label: str
    subtype: str
    depth: int = 0

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"


@dataclass(frozen=True)
class Edge:
    kind: str  # the edge kind's name: relation, about, link, contains, mentions, cites
    source: str  # node key
    target: str
    label: str  # the relation's or link's type, the citation's relation...
    weight: float
    id: str | None = None  # the row's id for edges that are rows of their own


@dataclass
class CrossGraph:
    center: Node
    nodes: list[Node]
    edges: list[Edge]
    truncated: bool = False  # max_nodes cut the walk short


@dataclass(frozen=True)
class Walk:
    """What a walk may follow and show."""

    node_types: tuple[str, ...] = ()  # () = every kind
    edge_types: tuple[str, ...] = ()  # () = every edge kind
    direction: str = "both"
    scope: GraphScope | None = None
    as_of: datetime | None = None

    def kinds(self) -> dict[str, NodeKind]:
        names = self.node_types or tuple(NODE_KINDS)
        return {name: NODE_KINDS[name] for name in names}

    def edges(self) -> list[EdgeKind]:
        kinds = self.kinds()
        return [
            edge
            for edge in EDGE_KINDS
            if edge.source in kinds
            and edge.target in kinds
            and (not self.edge_types or edge.name in self.edge_types)
        ]

    def params(self, project: Project) -> dict[str, Any]:
        params: dict[str, Any] = {"project": project.pk, "as_of": self.as_of or timezone.now()}
        if self.scope is not None:
            params.update(_scope_params(self.scope))
        return params


def check_kinds(node_types: list[str] | None, edge_types: list[str] | None) -> None:
    problems = {}
    unknown = sorted(set(node_types or ()) - set(NODE_KINDS))
    if unknown:
        problems["node_types"] = [f"unknown {', '.join(unknown)}; one of {', '.join(NODE_KINDS)}"]
    names = {edge.name for edge in EDGE_KINDS}
    unknown = sorted(set(edge_types or ()) - names)
    if unknown:
        problems["edge_types"] = [f"unknown {', '.join(unknown)}; one of {', '.join(names)}"]
    if problems:
        raise InvalidInput("invalid graph kinds", fields=problems)


def parse_node(value: Any) -> NodeRef:
    """`<kind>:<id>` (`entity:12`, `document:5b1c…`) as a NodeRef; InvalidInput on `node`."""
    kind, _, raw = str(value).partition(":")
    node_kind = NODE_KINDS.get(kind)
    try:
        if node_kind is None:
            raise ValueError
        return NodeRef(kind, int(raw) if node_kind.id_type == "bigint" else uuid.UUID(raw))
    except ValueError as exc:
        message = f"<kind>:<id> with a kind among {', '.join(NODE_KINDS)}"
        raise InvalidInput(f"node must be {message}", fields={"node": [message]}) from exc


def graph_subgraph(
    *,
    project: Project,
    node: NodeRef,
    depth: int = 1,
    walk: Walk | None = None,
    max_nodes: int = 100,
) -> CrossGraph:
    """The nodes within `depth` hops of `node` over every kind of edge `walk` allows, and
    the edges among them; NotFound for a node the project (or the walk's scope) lacks."""
    walk = walk or Walk()
    check_walk(depth=depth, max_nodes=max_nodes, direction=walk.direction)
    check_kinds(list(walk.node_types), list(walk.edge_types))
    kinds = walk.kinds()
    if node.kind not in kinds:
        message = f"the node's kind, {node.kind}, is not among node_types"
        raise InvalidInput(message, fields={"node_types": [message]})
    params = walk.params(project)
    reached, truncated = _walk(node, depth, max_nodes, walk, params)
    by_kind: dict[str, list[Any]] = defaultdict(list)
    for key_kind, key_id in reached:
        by_kind[key_kind].append(key_id)
    nodes = _nodes(kinds, by_kind, walk, params)
    center = next((n for n in nodes if (n.kind, n.id) == (node.kind, node.id)), None)
    if center is None:  # not the project's, or not what the scope sees: nothing is shown
        raise NotFound(f"{node.kind} not found")
    for found in nodes:
        found.depth = reached[(found.kind, found.id)]
    order = list(kinds)
    nodes.sort(key=lambda n: (n.depth, order.index(n.kind), n.label.casefold(), str(n.id)))
    return CrossGraph(center, nodes, _edges_among(walk, by_kind, params), truncated)


def _walk(
    start: NodeRef, depth: int, max_nodes: int, walk: Walk, params: dict[str, Any]
) -> tuple[dict[tuple[str, Any], int], bool]:
    reached: dict[tuple[str, Any], int] = {(start.kind, start.id): 0}
    frontier: dict[str, list[Any]] = {start.kind: [start.id]}
    for level in range(1, depth + 1):
        room = max_nodes - len(reached)
        if room <= 0 or not frontier:
            break
        found = _step(walk, frontier, reached, room + 1, params)
        truncated = len(found) > room
        frontier = defaultdict(list)
        for kind, node_id in found[:room]:
            reached[(kind, node_id)] = level
            frontier[kind].append(node_id)
        if truncated:
            return reached, True
    return reached, False


def _step(
    walk: Walk,
    frontier: dict[str, list[Any]],
    reached: dict[tuple[str, Any], int],
    limit: int,
    params: dict[str, Any],
) -> list[tuple[str, Any]]:
    """The `limit` strongest-connected unvisited neighbours of the frontier, (kind, id)."""
    kinds = walk.kinds()
    branches = []
    for edge in walk.edges():
        sides = []
        if walk.direction in ("out", "both") and edge.source in frontier:
            sides.append(("src", "dst", edge.source, edge.target))
        if walk.direction in ("in", "both") and edge.target in frontier:
            sides.append(("dst", "src", edge.target, edge.source))
        for near, far, near_kind, far_kind in sides:
            branches.append(_branch(edge, walk, near, far, kinds[near_kind], kinds[far_kind]))
    if not branches:
        return []
    visited: dict[str, list[Any]] = defaultdict(list)
    for kind, node_id in reached:
        visited[kind].append(node_id)
    step_params = dict(params, limit=limit)
    for name in kinds:
        step_params[f"f_{name}"] = frontier.get(name, [])
        step_params[f"v_{name}"] = visited.get(name, [])
    sql = (
        f"SELECT kind, id FROM ({' UNION ALL '.join(branches)}) x "
        "GROUP BY kind, id ORDER BY max(w) DESC, kind, id LIMIT %(limit)s"
    )
    return [(kind, _native(kinds[kind], raw)) for kind, raw in _fetch(sql, step_params)]


def _branch(
    edge: EdgeKind, walk: Walk, near: str, far: str, near_kind: NodeKind, far_kind: NodeKind
) -> str:
    join = ""
    if walk.scope is not None and far_kind.scope is not None:
        condition = far_kind.scope(walk.scope)[0]
        join = (
            f" JOIN {far_kind.table} n ON n.id = e.{far} AND n.project_id = %(project)s"
            f" AND {condition}"
        )
    return (
        f"SELECT '{far_kind.name}'::text AS kind, e.{far}::text AS id, e.weight AS w "
        f"FROM ({_edge_sql(edge, walk)}) e{join} "
        f"WHERE e.{near} = ANY(%(f_{near_kind.name})s::{near_kind.id_type}[]) "
        f"AND e.{far} <> ALL(%(v_{far_kind.name})s::{far_kind.id_type}[])"
    )


def _edge_sql(edge: EdgeKind, walk: Walk) -> str:
    condition = "TRUE"
    if walk.scope is not None and edge.scope is not None:
        condition = edge.scope(walk.scope)[0]
    return edge.sql.replace("{scope}", condition)


def _fetch(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A walk's statement is a union of small index scans: run serially, since starting
    parallel-append workers costs more than the work (docs/graph.md, "One graph across
    kinds")."""
    return fetch_with_settings(DEFAULT_DB_ALIAS, sql, params, SERIAL)  # type: ignore[arg-type]


SERIAL = {"max_parallel_workers_per_gather": "0"}


def _native(kind: NodeKind, raw: str) -> Any:
    return int(raw) if kind.id_type == "bigint" else uuid.UUID(raw)


def _scope_params(scope: GraphScope) -> dict[str, Any]:
    return {f"scope_{name}": value for name, value in scope.as_dict().items() if value}


def _nodes(
    kinds: dict[str, NodeKind],
    ids: dict[str, list[Any]],
    walk: Walk,
    params: dict[str, Any],
    limit: int | None = None,
) -> list[Node]:
    """The live nodes among `ids` (every node of the kinds given an empty list when
    `limit` is set: the export), visible to the walk's scope, in one statement."""
    parts, node_params = [], dict(params)
    for name, kind in kinds.items():
        if name not in ids:
            continue
        condition = kind.live
        if walk.scope is not None and kind.scope is not None:
            condition += f" AND {kind.scope(walk.scope)[0]}"
        wanted = f"AND n.id = ANY(%(n_{name})s::{kind.id_type}[])" if limit is None else ""
        node_params[f"n_{name}"] = ids[name]
        parts.append(
            f"(SELECT '{name}'::text, n.id::text, coalesce({kind.label}, '')::text, "
            f"coalesce({kind.subtype}, '')::text FROM {kind.table} n "
            f"WHERE n.project_id = %(project)s {wanted} AND {condition}"
            + (" ORDER BY n.id LIMIT %(limit)s)" if limit is not None else ")")
        )
    if not parts:
        return []
    node_params["limit"] = limit
    return [
        Node(kind, _native(kinds[kind], raw), label, subtype)
        for kind, raw, label, subtype in _fetch(" UNION ALL ".join(parts), node_params)
    ]


def _edges_among(walk: Walk, ids: dict[str, list[Any]], params: dict[str, Any]) -> list[Edge]:
    """Every edge the walk may follow between two of the nodes `ids` (by kind)."""
    kinds = walk.kinds()
    parts, edge_params = [], dict(params)
    for name in kinds:
        edge_params[f"n_{name}"] = ids.get(name, [])
    for edge in walk.edges():
        if not ids.get(edge.source) or not ids.get(edge.target):
            continue
        source, target = kinds[edge.source], kinds[edge.target]
        parts.append(
            f"SELECT '{edge.name}'::text, '{source.name}'::text, e.src::text, "
            f"'{target.name}'::text, e.dst::text, e.weight, e.label::text, e.eid "
            f"FROM ({_edge_sql(edge, walk)}) e "
            f"WHERE e.src = ANY(%(n_{source.name})s::{source.id_type}[]) "
            f"AND e.dst = ANY(%(n_{target.name})s::{target.id_type}[])"
        )
    if not parts:
        return []
    rows = _fetch(" UNION ALL ".join(parts), edge_params)
    edges = [
        Edge(name, f"{sk}:{src}", f"{tk}:{dst}", label or name, float(weight), eid)
        for name, sk, src, tk, dst, weight, label, eid in rows
    ]
    return sorted(edges, key=lambda e: (-e.weight, e.kind, e.source, e.target, e.label))


@dataclass
class CrossExport:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    truncated: bool = False


def graph_export_kinds(
    *, project: Project, walk: Walk, max_nodes: int = EXPORT_MAX_NODES
) -> CrossExport:
    """Every node of the walk's kinds (up to `max_nodes`, kind after kind) and the edges
    among them: the typed export (JSON or GraphML)."""
    check_kinds(list(walk.node_types), list(walk.edge_types))
    if not 1 <= max_nodes <= EXPORT_MAX_NODES:
        message = f"between 1 and {EXPORT_MAX_NODES}"
        raise InvalidInput(f"max_nodes must be {message}", fields={"max_nodes": [message]})
    params = walk.params(project)
    kinds = walk.kinds()
    found = _nodes(kinds, {name: [] for name in kinds}, walk, params, limit=max_nodes + 1)
    truncated = len(found) > max_nodes
    found = found[:max_nodes]
    by_kind: dict[str, list[Any]] = defaultdict(list)
    for node in found:
        by_kind[node.kind].append(node.id)
    return CrossExport(found, _edges_among(walk, by_kind, params), truncated)


__all__ = ["MAX_NODES", "CrossGraph", "Edge", "Node", "NodeRef", "Walk", "graph_subgraph"]
