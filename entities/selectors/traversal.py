"""Graph walks as PostgreSQL recursive CTEs: entities over relations (memories over links
are walked by memories.selectors.link_traversal, re-exported below).

The walk is a level-by-level BFS: each step of the recursion carries the whole frontier and
the visited set as arrays, so a node is expanded once however many paths reach it (cycle-safe,
linear in the edges touched, unlike path-enumerating CTEs that explode on dense graphs).
When a level would exceed `max_nodes`, its strongest-connected nodes are kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from django.db import connection
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from entities.models import Entity, EntityMemory, Relation
from entities.scope import GraphScope
from entities.selectors.entities import entity_get
from memories.models import Memory
from memories.selectors.link_traversal import (
    CAUSAL_LINK_TYPES as CAUSAL_LINK_TYPES,
)
from memories.selectors.link_traversal import (
    MemoryGraph as MemoryGraph,
)
from memories.selectors.link_traversal import (
    memory_causal_chain as memory_causal_chain,
)
from memories.selectors.link_traversal import (
    memory_traverse as memory_traverse,
)
from memories.selectors.memories import memories_by_id
from platformcore.lib.errors import InvalidInput
from tenants.models import Project

Direction = Literal["out", "in", "both"]
DIRECTIONS = ("out", "in", "both")
MAX_DEPTH = 5
MAX_NODES = 1000


@dataclass(frozen=True)
class _Walk:
    """Where the edges live and how to read them; the values are SQL identifiers we own."""

    edge_table: str
    source: str
    target: str
    kind: str
    id_type: str
    node_join: str = ""  # extra join/filter on the reached node (e.g. live memories only)


_ENTITY_WALK = _Walk(
    edge_table=Relation._meta.db_table,
    source="source_id",
    target="target_id",
    kind="relation_type",
    id_type="bigint",
)


def _step_sql(walk: _Walk, near: str, far: str, edge_filter: str) -> str:
    return (
        f"SELECT e.{far} AS id, e.strength FROM {walk.edge_table} e "
        f"WHERE e.{near} = ANY(b.frontier) AND {edge_filter}"
    )


def _bfs_sql(walk: _Walk, direction: Direction, edge_filter: str) -> str:
    steps = []
    if direction in ("out", "both"):
        steps.append(_step_sql(walk, walk.source, walk.target, edge_filter))
    if direction in ("in", "both"):
        steps.append(_step_sql(walk, walk.target, walk.source, edge_filter))
    candidates = " UNION ALL ".join(steps)
    return f"""
    WITH RECURSIVE bfs(depth, frontier, visited) AS (
        SELECT 0, %(starts)s::{walk.id_type}[], %(starts)s::{walk.id_type}[]
      UNION ALL
        SELECT b.depth + 1, n.ids, b.visited || n.ids
        FROM bfs b
        CROSS JOIN LATERAL (
            SELECT array_agg(c.id ORDER BY c.best DESC, c.id) AS ids
            FROM (
                SELECT x.id, max(x.strength) AS best
                FROM ({candidates}) x
                {walk.node_join}
                WHERE x.id <> ALL(b.visited)
                GROUP BY x.id
                ORDER BY best DESC, x.id
                LIMIT %(max_nodes)s - cardinality(b.visited)
            ) c
        ) n
        WHERE b.depth < %(depth)s
          AND cardinality(b.visited) < %(max_nodes)s
          AND n.ids IS NOT NULL
    )
    SELECT u.id, b.depth FROM bfs b CROSS JOIN LATERAL unnest(b.frontier) AS u(id)
    """


def _bfs(walk: _Walk, *, direction: Direction, edge_filter: str, params: dict[str, Any]) -> dict:
    """{node id: hop count} reached from params["starts"] (the nearest of them)."""
    with connection.cursor() as cursor:
        cursor.execute(_bfs_sql(walk, direction, edge_filter), params)
        return {node: depth for node, depth in cursor.fetchall()}


def check_walk(*, depth: int, max_nodes: int, direction: str) -> None:
    problems = {}
    if not 0 <= depth <= MAX_DEPTH:
        problems["depth"] = [f"between 0 and {MAX_DEPTH}"]
    if not 1 <= max_nodes <= MAX_NODES:
        problems["max_nodes"] = [f"between 1 and {MAX_NODES}"]
    if direction not in DIRECTIONS:
        problems["direction"] = ["one of out, in, both"]
    if problems:
        raise InvalidInput("invalid traversal parameters", fields=problems)


# --- entities ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RelationFilter:
    """Which relations a walk may follow."""

    min_strength: float = 0.0
    relation_types: list[str] | None = None
    as_of: datetime | None = None  # None: valid now
    scope: GraphScope | None = None  # None: every graph; else the project-wide one and its own

    def sql(self) -> str:
        types = "AND e.relation_type = ANY(%(types)s)" if self.relation_types else ""
        scope = f"AND {self.scope.visible_sql('e')[0]} " if self.scope is not None else ""
        return (
            "e.project_id = %(project)s AND e.strength >= %(min_strength)s "
            "AND e.valid_from <= %(as_of)s AND (e.valid_to IS NULL OR e.valid_to > %(as_of)s) "
            + scope
            + types
        )

    def params(self, project: Project) -> dict[str, Any]:
        scope = self.scope.visible_sql("e")[1] if self.scope is not None else {}
        return {
            "project": project.pk,
            "min_strength": self.min_strength,
            "as_of": self.as_of or timezone.now(),
            "types": list(self.relation_types or []),
            **scope,
        }

    def q(self, project: Project) -> Q:
        as_of = self.as_of or timezone.now()
        q = Q(project=project, strength__gte=self.min_strength, valid_from__lte=as_of)
        q &= Q(valid_to__isnull=True) | Q(valid_to__gt=as_of)
        if self.relation_types:
            q &= Q(relation_type__in=self.relation_types)
        if self.scope is not None:
            q &= self.scope.visible_q()
        return q


def entity_reach(
    *,
    project: Project,
    entity_ids: list[int],
    depth: int,
    relations: RelationFilter,
    direction: Direction = "both",
    max_nodes: int = MAX_NODES,
    one_walk: bool = False,
) -> dict[int, int]:
    """{entity id: hops} for every entity within `depth` hops of any start entity: one walk
    per start, each with `max_nodes`, or (`one_walk`) one walk from all of them sharing
    `max_nodes`, as searches do: a name that is an entity in each of 50 users' graphs is 50
    starts, and 50 walks cost fifty times one."""
    groups = [list(entity_ids)] if one_walk else [[start] for start in entity_ids]
    reach: dict[int, int] = {}
    for starts in groups:
        params = {**relations.params(project), "starts": starts}
        params.update(depth=depth, max_nodes=max_nodes)
        found = _bfs(_ENTITY_WALK, direction=direction, edge_filter=relations.sql(), params=params)
        for node, hops in found.items():
            reach[node] = min(hops, reach.get(node, hops))
    return reach


def entity_neighbours(
    *, project: Project, entity_ids: list[int], relations: RelationFilter, max_nodes: int
) -> list[tuple[int, int, float]]:
    """(start, neighbour, strength × confidence) for every relation `relations` lets a walk
    follow between a start entity and its direct neighbours (either direction), the
    neighbours limited to the `max_nodes` − starts most strongly connected as `entity_reach`
    limits a level; relations between two starts are included. One statement: a one-hop
    walk needs neither the recursion nor a second statement for the edges."""
    sql = f"""
    WITH edges AS MATERIALIZED (
        SELECT e.source_id AS near, e.target_id AS far, e.strength, e.confidence
        FROM {Relation._meta.db_table} e
        WHERE e.source_id = ANY(%(starts)s::bigint[]) AND {relations.sql()}
      UNION ALL
        SELECT e.target_id, e.source_id, e.strength, e.confidence
        FROM {Relation._meta.db_table} e
        WHERE e.target_id = ANY(%(starts)s::bigint[]) AND {relations.sql()}
    ), kept AS (
        SELECT far FROM edges WHERE far <> ALL(%(starts)s::bigint[])
        GROUP BY far ORDER BY max(strength) DESC, far LIMIT %(room)s
    )
    SELECT near, far, strength * confidence FROM edges
    WHERE far = ANY(%(starts)s::bigint[]) OR far IN (SELECT far FROM kept)
    """
    params = {
        **relations.params(project),
        "starts": entity_ids,
        "room": max(0, max_nodes - len(entity_ids)),
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(near, far, float(weight)) for near, far, weight in cursor.fetchall()]


@dataclass(frozen=True)
class GraphNode:
    id: int
    name: str
    entity_type: str
    description: str
    aliases: list[str]
    depth: int


@dataclass(frozen=True)
class GraphEdge:
    id: int
    source_id: int
    target_id: int
    relation_type: str
    strength: float
    confidence: float
    valid_from: datetime
    valid_to: datetime | None
    invalidated_at: datetime | None


@dataclass
class Subgraph:
    center: Entity
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    memories: dict[int, list[Memory]] = field(default_factory=dict)  # entity id -> memories


_NODE_FIELDS = ("id", "name", "entity_type", "description", "aliases")
_EDGE_FIELDS = tuple(GraphEdge.__dataclass_fields__)


def entity_subgraph(
    *,
    project: Project,
    entity_id: int | str,
    depth: int = 1,
    relations: RelationFilter | None = None,
    direction: Direction = "both",
    max_nodes: int = 100,
    include_memories: bool = False,
    memories_per_node: int = 5,
) -> Subgraph:
    """The entities within `depth` hops of one entity, the relations among them, and
    optionally each node's most relevant live memories. Nodes and edges are plain records
    (no model instances): a 1000-node subgraph stays a few queries and no ORM overhead.
    With `relations.scope`, the walk follows and shows only what that scope sees."""
    check_walk(depth=depth, max_nodes=max_nodes, direction=direction)
    relations = relations or RelationFilter()
    center = entity_get(project=project, entity_id=entity_id, scope=relations.scope)
    reach = entity_reach(
        project=project,
        entity_ids=[center.pk],
        depth=depth,
        relations=relations,
        direction=direction,
        max_nodes=max_nodes,
    )
    rows = Entity.objects.filter(project=project, pk__in=list(reach))
    if relations.scope is not None:
        rows = rows.filter(relations.scope.visible_q())
        visible = set(rows.values_list("pk", flat=True))
        reach = {pk: hops for pk, hops in reach.items() if pk in visible}
    rows = rows.values_list(*_NODE_FIELDS)
    nodes = sorted(
        (
            GraphNode(
                id=pk,
                name=name,
                entity_type=kind,
                description=description,
                aliases=aliases,
                depth=reach[pk],
            )
            for pk, name, kind, description, aliases in rows
        ),
        key=lambda node: (node.depth, node.name.casefold(), node.id),
    )
    edges = edges_among(project, list(reach), relations)
    memories = (
        entity_top_memories(project=project, entity_ids=list(reach), per_entity=memories_per_node)
        if include_memories
        else {}
    )
    return Subgraph(center, nodes, edges, memories)


def edges_among(project: Project, ids: list[int], relations: RelationFilter) -> list[GraphEdge]:
    """The relations between two of the entities `ids` that `relations` lets a walk follow,
    strongest first."""
    # unnest + hash join on the source and a hashed ANY on the target: one index scan,
    # where `IN (...) AND IN (...)` makes the planner walk the relations table
    columns = ", ".join(f"e.{name}" for name in _EDGE_FIELDS)
    sql = (
        f"SELECT {columns} FROM unnest(%(nodes)s::bigint[]) AS s(id) "
        f"JOIN {Relation._meta.db_table} e ON e.source_id = s.id "
        f"WHERE e.target_id = ANY(%(nodes)s::bigint[]) AND {relations.sql()} "
        "ORDER BY e.strength DESC, e.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, {**relations.params(project), "nodes": ids})
        return [GraphEdge(*row) for row in cursor.fetchall()]


def entity_top_memories(
    *, project: Project, entity_ids: list[int], per_entity: int
) -> dict[int, list[Memory]]:
    """The `per_entity` most relevant live memories of each entity, newest first on ties."""
    if not entity_ids or per_entity <= 0:
        return {}
    rank = Window(
        RowNumber(),
        partition_by=[F("entity_id")],
        order_by=[F("relevance").desc(), F("memory__created_at").desc()],
    )
    links = list(
        EntityMemory.objects.filter(project=project, entity_id__in=entity_ids)
        .filter(memory__deleted_at__isnull=True)
        .annotate(rank=rank)
        .filter(rank__lte=per_entity)
        .values_list("entity_id", "memory_id")
    )
    found = memories_by_id(project=project, ids=[m for _, m in links])
    out: dict[int, list[Memory]] = {}
    for entity_pk, memory_pk in links:
        if memory_pk in found:
            out.setdefault(entity_pk, []).append(found[memory_pk])
    return out


# --- memories --------------------------------------------------------------------------------
# Walks over memory links live in the memory store (memories.selectors.link_traversal); they are
# re-exported here, where the graph's REST views and MCP tools have always found them.
