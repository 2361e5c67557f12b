"""Walks over memory-to-memory links (the mcp-ai-memory plan's traversal service).

From one memory, the walk follows typed links out, in or both ways and returns the live
memories it reached, each with its depth, and the links among them:

- `strategy` "bfs" (breadth first: every memory one link away, then two...) or "dfs" (depth
  first: the strongest link followed as deep as `depth` allows before its siblings); both
  follow the stronger link first and are capped at `max_nodes`;
- `time_budget_ms`: checked between steps (one statement per level breadth first, one per
  memory expanded depth first); when spent, the walk returns what it reached so far with
  `truncated` set;
- filters: `link_types`, `min_strength` on the links; `memory_types` and `tags` (all must
  match) on the memories reached: a memory that fails them is neither returned nor walked
  through;
- `include_parent_links`: the containment hierarchy (`part_of` / `contains`, a memory's
  parent and children) is followed too when `link_types` names other types. Without
  `link_types` every type is followed, the hierarchy included;
- a scope (`user_id`, `agent_id`, `run_id`): the walk starts from a memory of that scope and
  stays inside it (the plan's `user_context`), neither returning nor walking through
  another scope's memories.

Every statement is scoped to the caller's project and agent namespace and skips soft-deleted
memories.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID

from django.db import connection

from memories.models import LinkType, Memory, MemoryLink, MemoryType
from memories.selectors.memories import memories_by_id, memory_get
from platformcore.lib.errors import InvalidInput, NotFound
from tenants.models import Project
from tenants.namespaces import SHARED_AGENT, current_namespace

SCOPE_FIELDS = ("user_id", "agent_id", "run_id")

Direction = Literal["out", "in", "both"]
Strategy = Literal["bfs", "dfs"]
DIRECTIONS = ("out", "in", "both")
STRATEGIES = ("bfs", "dfs")
MAX_DEPTH = 5
MAX_NODES = 1000
MAX_TIME_BUDGET_MS = 60_000
CAUSAL_LINK_TYPES = ("caused_by", "causes", "resolved_by")
PARENT_LINK_TYPES = ("part_of", "contains")


@dataclass
class MemoryGraph:
    center: Memory
    nodes: list[Memory]  # each carries `.depth`; depth first, in the order visited
    edges: list[MemoryLink]
    strategy: str = "bfs"
    truncated: bool = False  # the time budget ended the walk before it was complete


@dataclass(frozen=True)
class WalkFilter:
    """Which links a walk follows and which memories it may reach."""

    link_types: tuple[str, ...] = ()
    min_strength: float = 0.0
    memory_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    include_parent_links: bool = False
    scope: tuple[tuple[str, str], ...] = ()  # (field, value) the memories reached must have
    namespace: str | None = None  # the reading agent (tenants/namespaces.py)

    def admits(self, memory: Memory) -> bool:
        """Whether `memory` is inside the walk's scope (the start must be)."""
        return all(getattr(memory, name) == value for name, value in self.scope)

    def followed_types(self) -> list[str]:
        if not self.link_types:
            return []
        extra = PARENT_LINK_TYPES if self.include_parent_links else ()
        return list(dict.fromkeys([*self.link_types, *extra]))

    def edge_sql(self) -> str:
        sql = "e.project_id = %(project)s AND e.strength >= %(min_strength)s"
        return sql + (" AND e.link_type = ANY(%(types)s)" if self.link_types else "")

    def node_sql(self) -> str:
        sql = ""
        if self.memory_types:
            sql += " AND m.memory_type = ANY(%(memory_types)s)"
        if self.tags:
            sql += " AND m.tags @> %(tags)s::varchar[]"
        for name, _ in self.scope:  # the names come from SCOPE_FIELDS, never from input
            sql += f" AND m.{name} = %(scope_{name})s"
        if self.namespace:
            sql += " AND (m.agent_id = ANY(%(namespace)s) OR m.agent_id IS NULL)"
        return sql

    def params(self, project: Project) -> dict[str, Any]:
        return {
            "project": project.pk,
            "min_strength": self.min_strength,
            "types": self.followed_types(),
            "memory_types": list(self.memory_types),
            "tags": list(self.tags),
            "namespace": [self.namespace, SHARED_AGENT],
            **{f"scope_{name}": value for name, value in self.scope},
        }


def check_walk(
    *,
    depth: int,
    max_nodes: int,
    direction: str,
    strategy: str = "bfs",
    time_budget_ms: int | None = None,
    walk: WalkFilter | None = None,
) -> None:
    problems: dict[str, list[str]] = {}
    if not 0 <= depth <= MAX_DEPTH:
        problems["depth"] = [f"between 0 and {MAX_DEPTH}"]
    if not 1 <= max_nodes <= MAX_NODES:
        problems["max_nodes"] = [f"between 1 and {MAX_NODES}"]
    if direction not in DIRECTIONS:
        problems["direction"] = ["one of out, in, both"]
    if strategy not in STRATEGIES:
        problems["strategy"] = ["one of bfs, dfs"]
    if time_budget_ms is not None and not 1 <= time_budget_ms <= MAX_TIME_BUDGET_MS:
        problems["time_budget_ms"] = [f"between 1 and {MAX_TIME_BUDGET_MS}"]
    if walk is not None:
        unknown = [t for t in walk.link_types if t not in LinkType.values]
        if unknown:
            problems["link_types"] = [f"unknown link type(s): {', '.join(unknown)}"]
        unknown = [t for t in walk.memory_types if t not in MemoryType.values]
        if unknown:
            problems["memory_types"] = [f"unknown memory type(s): {', '.join(unknown)}"]
        if not 0.0 <= walk.min_strength <= 1.0:
            problems["min_strength"] = ["within [0, 1]"]
    if problems:
        raise InvalidInput("invalid traversal parameters", fields=problems)


def _neighbours_sql(walk: WalkFilter, direction: Direction) -> str:
    steps = []
    edge = walk.edge_sql()
    if direction in ("out", "both"):
        steps.append(
            "SELECT e.to_memory_id AS id, e.strength FROM memories_memorylink e "
            f"WHERE e.from_memory_id = ANY(%(frontier)s::uuid[]) AND {edge}"
        )
    if direction in ("in", "both"):
        steps.append(
            "SELECT e.from_memory_id AS id, e.strength FROM memories_memorylink e "
            f"WHERE e.to_memory_id = ANY(%(frontier)s::uuid[]) AND {edge}"
        )
    return f"""
        SELECT x.id FROM ({" UNION ALL ".join(steps)}) x
        JOIN memories_memory m ON m.id = x.id AND m.project_id = %(project)s
             AND m.deleted_at IS NULL{walk.node_sql()}
        WHERE x.id <> ALL(%(visited)s::uuid[])
        GROUP BY x.id ORDER BY max(x.strength) DESC, x.id LIMIT %(limit)s
    """


@dataclass
class _Walker:
    sql: str
    params: dict[str, Any]
    deadline: float | None
    reach: dict[UUID, int] = field(default_factory=dict)  # in the order reached
    truncated: bool = False

    def out_of_time(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.truncated = True
        return self.truncated

    def neighbours(self, frontier: list[UUID], limit: int) -> list[UUID]:
        params = {**self.params, "frontier": frontier, "visited": list(self.reach)}
        with connection.cursor() as cursor:
            cursor.execute(self.sql, {**params, "limit": limit})
            return [row[0] for row in cursor.fetchall()]

    def breadth_first(self, start: UUID, depth: int, max_nodes: int) -> None:
        self.reach[start] = 0
        frontier = [start]
        for level in range(1, depth + 1):
            room = max_nodes - len(self.reach)
            if room <= 0 or not frontier or self.out_of_time():
                return
            frontier = self.neighbours(frontier, room)
            self.reach.update(dict.fromkeys(frontier, level))

    def depth_first(self, start: UUID, depth: int, max_nodes: int) -> None:
        self.reach[start] = 0
        stack = [(0, self._children(start, 0, depth, max_nodes))]
        while stack and len(self.reach) < max_nodes:
            level, children = stack[-1]
            child = next((c for c in children if c not in self.reach), None)
            if child is None:
                stack.pop()
                continue
            self.reach[child] = level + 1
            if self.out_of_time():
                return
            stack.append((level + 1, self._children(child, level + 1, depth, max_nodes)))

    def _children(self, node: UUID, level: int, depth: int, max_nodes: int) -> Any:
        if level >= depth:
            return iter(())
        return iter(self.neighbours([node], max_nodes - len(self.reach)))


def memory_traverse(
    *,
    project: Project,
    memory_id: UUID | str,
    depth: int = 2,
    link_types: list[str] | None = None,
    direction: Direction = "both",
    min_strength: float = 0.0,
    max_nodes: int = 100,
    strategy: Strategy = "bfs",
    time_budget_ms: int | None = None,
    memory_types: list[str] | None = None,
    tags: list[str] | None = None,
    include_parent_links: bool = False,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
) -> MemoryGraph:
    """The live memories reachable from one memory over typed links; see the module."""
    namespace = current_namespace()
    given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    if namespace is not None and agent_id == namespace.agent:
        given["agent_id"] = None  # it named the reading agent: its own and the shared pool
    walk = WalkFilter(
        link_types=tuple(link_types or ()),
        min_strength=min_strength,
        memory_types=tuple(memory_types or ()),
        tags=tuple(tags or ()),
        include_parent_links=include_parent_links,
        scope=tuple((name, value) for name, value in given.items() if value),
        namespace=namespace.agent if namespace is not None else None,
    )
    check_walk(
        depth=depth,
        max_nodes=max_nodes,
        direction=direction,
        strategy=strategy,
        time_budget_ms=time_budget_ms,
        walk=walk,
    )
    deadline = time.monotonic() + time_budget_ms / 1000 if time_budget_ms else None
    center = memory_get(project=project, memory_id=memory_id)
    if not walk.admits(center):
        raise NotFound("memory not found")  # another scope's memory, as another project's
    walker = _Walker(_neighbours_sql(walk, direction), walk.params(project), deadline)
    if strategy == "dfs":
        walker.depth_first(center.pk, depth, max_nodes)
    else:
        walker.breadth_first(center.pk, depth, max_nodes)
    return _graph(project, center, walker, walk, strategy)


def _graph(
    project: Project, center: Memory, walker: _Walker, walk: WalkFilter, strategy: str
) -> MemoryGraph:
    reach = walker.reach
    found = memories_by_id(project=project, ids=list(reach))
    nodes = [found[pk] for pk in reach if pk in found]
    for node in nodes:
        node.depth = reach[node.pk]  # type: ignore[attr-defined]
    if strategy == "bfs":
        nodes.sort(key=lambda node: (node.depth, -node.created_at.timestamp()))  # type: ignore[attr-defined]
    edges = MemoryLink.objects.filter(
        project=project,
        from_memory_id__in=list(reach),
        to_memory_id__in=list(reach),
        strength__gte=walk.min_strength,
    )
    if walk.link_types:
        edges = edges.filter(link_type__in=walk.followed_types())
    edges = edges.order_by("-strength", "created_at")
    return MemoryGraph(center, nodes, list(edges), strategy, walker.truncated)


def memory_causal_chain(
    *,
    project: Project,
    memory_id: UUID | str,
    depth: int = 3,
    max_nodes: int = 100,
    **scope: str | None,
) -> MemoryGraph:
    """Causes and resolutions around a memory, typically an `error` (Memento `graph_explore`):
    the walk follows only caused_by / causes / resolved_by links, both ways, inside `scope`
    (`user_id`, `agent_id`, `run_id`) when given."""
    return memory_traverse(
        project=project,
        memory_id=memory_id,
        depth=depth,
        link_types=list(CAUSAL_LINK_TYPES),
        direction="both",
        max_nodes=max_nodes,
        **scope,  # type: ignore[arg-type]
    )
