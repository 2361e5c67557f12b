"""Graph analytics computed on demand (nothing persisted), and export as JSON or GraphML.

The graph and decay plan's `memory_graph_analysis`: in/out degree and top connectors, for the
entity graph and for the memory-to-memory link graph; plus type distributions. Given a scope
(the plan's `user_context`), the entity graph is what that scope sees (its own and the
project-wide graph) and the memory links are those between that scope's memories."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from xml.etree import ElementTree as ET

from django.db import connection
from django.db.models import Avg, Count, Q
from django.utils import timezone

from entities.models import Entity, EntityMemory, Relation
from entities.scope import GRAPH_SCOPE_FIELDS, GraphScope
from entities.selectors.graph import CrossExport
from memories.models import Memory, MemoryLink
from tenants.models import Project


def _valid_at(moment: datetime) -> Q:
    return Q(valid_from__lte=moment) & (Q(valid_to__isnull=True) | Q(valid_to__gt=moment))


def _top_connectors(table: str, source: str, target: str, where: str, params: list, top: int):
    sql = f"""
        SELECT node, sum(out_degree)::int AS out_degree, sum(in_degree)::int AS in_degree
        FROM (
            SELECT {source} AS node, count(*) AS out_degree, 0 AS in_degree
            FROM {table} WHERE {where} GROUP BY {source}
          UNION ALL
            SELECT {target}, 0, count(*) FROM {table} WHERE {where} GROUP BY {target}
        ) d
        GROUP BY node
        ORDER BY sum(out_degree) + sum(in_degree) DESC, node
        LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *params, top])
        return cursor.fetchall()


def graph_analysis(
    *, project: Project, top: int = 10, scope: GraphScope | None = None
) -> dict[str, Any]:
    """Counts, degree statistics, top connectors and type distributions of the project's graph
    (relations valid now) and of its memory links (between live memories); of one scope's
    when `scope` is given."""
    now = timezone.now()
    visible = scope.visible_q() if scope is not None else Q()
    relations = Relation.objects.filter(project=project).filter(_valid_at(now)).filter(visible)
    entities = Entity.objects.filter(project=project).filter(visible)
    where = "project_id = %s AND valid_from <= %s AND (valid_to IS NULL OR valid_to > %s)"
    params: list[Any] = [project.pk, now, now]
    if scope is not None:
        condition, named = scope.visible_sql(Relation._meta.db_table)
        where += " AND " + _positional(condition, named, params)
    rows = _top_connectors(Relation._meta.db_table, "source_id", "target_id", where, params, top)
    names = dict(entities.filter(pk__in=[r[0] for r in rows]).values_list("pk", "name"))
    entity_count = entities.count()
    relation_count = relations.count()
    connected = (
        entities.filter(Q(relations_out__in=relations) | Q(relations_in__in=relations))
        .distinct()
        .count()
    )
    return {
        "entities": {
            "count": entity_count,
            "by_type": _distribution(entities, "entity_type"),
            "isolated": entity_count - connected,
            "with_memories": EntityMemory.objects.filter(project=project, entity__in=entities)
            .values("entity_id")
            .distinct()
            .count(),
        },
        "relations": {
            "count": relation_count,
            "closed": Relation.objects.filter(visible, project=project)
            .exclude(_valid_at(now))
            .count(),
            "by_type": _distribution(relations, "relation_type"),
            "average_strength": _round(relations.aggregate(v=Avg("strength"))["v"]),
            "average_confidence": _round(relations.aggregate(v=Avg("confidence"))["v"]),
            "average_degree": round(2 * relation_count / entity_count, 3) if entity_count else 0.0,
        },
        "top_connectors": [
            {
                "id": node,
                "name": names.get(node, ""),
                "out_degree": out_degree,
                "in_degree": in_degree,
                "degree": out_degree + in_degree,
            }
            for node, out_degree, in_degree in rows
        ],
        "memory_links": _memory_link_analysis(project, top, scope),
    }


def _positional(condition: str, named: dict[str, Any], params: list[Any]) -> str:
    """`condition`'s named parameters (`%(name)s`) as positional ones appended to `params`."""
    for name, value in named.items():
        condition = condition.replace(f"%({name})s", "%s")
        params.append(value)
    return condition


def _memory_link_analysis(project: Project, top: int, scope: GraphScope | None) -> dict[str, Any]:
    """The links between live memories (of `scope`: every field it gives must match), within
    the caller's agent namespace."""
    given = {n: v for n in GRAPH_SCOPE_FIELDS if scope is not None and (v := getattr(scope, n))}
    live = Memory.objects.for_project(project).alive().filter(**given)
    links = MemoryLink.objects.filter(project=project, from_memory__in=live, to_memory__in=live)
    live_sql, live_params = live.values("id").query.sql_with_params()
    where = f"project_id = %s AND from_memory_id IN ({live_sql}) AND to_memory_id IN ({live_sql})"
    rows = _top_connectors(
        MemoryLink._meta.db_table,
        "from_memory_id",
        "to_memory_id",
        where,
        [project.pk, *live_params, *live_params],
        top,
    )
    contents = dict(
        Memory.objects.filter(project=project, pk__in=[r[0] for r in rows]).values_list(
            "pk", "content"
        )
    )
    return {
        "count": links.count(),
        "by_type": _distribution(links, "link_type"),
        "top_connectors": [
            {
                "id": str(node),
                "content": contents.get(node, "")[:200],
                "out_degree": out_degree,
                "in_degree": in_degree,
                "degree": out_degree + in_degree,
            }
            for node, out_degree, in_degree in rows
        ],
    }


def _distribution(queryset: Any, field: str) -> dict[str, int]:
    rows = queryset.values(field).annotate(n=Count("id")).order_by("-n", field)
    return {row[field]: row["n"] for row in rows}


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


# --- export --------------------------------------------------------------------------------


def graph_export(
    *, project: Project, as_of: datetime | None = None, include_closed: bool = False
) -> dict[str, Any]:
    """The whole graph as {"nodes": [...], "edges": [...]}: relations valid now (or `as_of`),
    or every relation ever recorded with `include_closed`."""
    relations = Relation.objects.filter(project=project)
    if as_of is not None or not include_closed:
        relations = relations.filter(_valid_at(as_of or timezone.now()))
    nodes = [
        {
            "id": entity["id"],
            "name": entity["name"],
            "entity_type": entity["entity_type"],
            "description": entity["description"],
            "aliases": entity["aliases"],
        }
        for entity in Entity.objects.filter(project=project)
        .order_by("id")
        .values("id", "name", "entity_type", "description", "aliases")
    ]
    edges = [
        {**edge, **{key: _iso(edge[key]) for key in ("valid_from", "valid_to")}}
        for edge in relations.order_by("id").values(
            "id",
            "source_id",
            "target_id",
            "relation_type",
            "strength",
            "confidence",
            "valid_from",
            "valid_to",
        )
    ]
    return {"project": project.slug, "nodes": nodes, "edges": edges}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
_NODE_KEYS = ("name", "entity_type", "description")
_EDGE_KEYS = ("relation_type", "strength", "confidence", "valid_from", "valid_to")
_KEY_TYPES = {"strength": "double", "confidence": "double"}


def graph_export_graphml(
    *, project: Project, as_of: datetime | None = None, include_closed: bool = False
) -> str:
    """The same export as GraphML (Gephi, yEd, NetworkX, Cytoscape read it)."""
    data = graph_export(project=project, as_of=as_of, include_closed=include_closed)
    root = ET.Element("graphml", xmlns=GRAPHML_NS)
    for scope, keys in (("node", _NODE_KEYS), ("edge", _EDGE_KEYS)):
        for key in keys:
            ET.SubElement(
                root,
                "key",
                id=key,
                attrib={"for": scope, "attr.name": key, "attr.type": _KEY_TYPES.get(key, "string")},
            )
    graph = ET.SubElement(root, "graph", id=project.slug, edgedefault="directed")
    for node in data["nodes"]:
        element = ET.SubElement(graph, "node", id=f"e{node['id']}")
        _data(element, node, _NODE_KEYS)
    for edge in data["edges"]:
        element = ET.SubElement(
            graph,
            "edge",
            id=f"r{edge['id']}",
            source=f"e{edge['source_id']}",
            target=f"e{edge['target_id']}",
        )
        _data(element, edge, _EDGE_KEYS)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _data(element: ET.Element, values: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if values.get(key) not in (None, ""):
            ET.SubElement(element, "data", key=key).text = str(values[key])


def graph_export_kinds_graphml(*, project: Project, export: CrossExport) -> str:
    """The typed export (nodes of several kinds) as GraphML: node ids are `<type>:<id>`, and
    every node and edge carries its `type`."""
    root = ET.Element("graphml", xmlns=GRAPHML_NS)
    for scope, keys in (("node", _TYPED_NODE_KEYS), ("edge", _TYPED_EDGE_KEYS)):
        for key in keys:
            kind = "double" if key == "weight" else "string"
            ET.SubElement(
                root, "key", id=key, attrib={"for": scope, "attr.name": key, "attr.type": kind}
            )
    graph = ET.SubElement(root, "graph", id=project.slug, edgedefault="directed")
    for node in export.nodes:
        element = ET.SubElement(graph, "node", id=node.key)
        _data(
            element,
            {"type": node.kind, "label": node.label, "subtype": node.subtype},
            _TYPED_NODE_KEYS,
        )
    for index, edge in enumerate(export.edges):
        element = ET.SubElement(
            graph, "edge", id=f"x{index}", source=edge.source, target=edge.target
        )
        values = {"type": edge.kind, "label": edge.label, "weight": edge.weight}
        _data(element, values, _TYPED_EDGE_KEYS)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


_TYPED_NODE_KEYS = ("type", "label", "subtype")
_TYPED_EDGE_KEYS = ("type", "label", "weight")
