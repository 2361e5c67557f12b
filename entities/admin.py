"""The knowledge graph in the curator admin: entities (with a picture of their neighbourhood),
relations and entity-memory links, scoped to the curator's projects (tenants.admin)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any
from uuid import UUID

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from entities.models import Entity, EntityMemory, Relation
from entities.selectors.traversal import Subgraph, entity_subgraph
from tenants.admin import ProjectScopedAdmin
from tenants.models import Project

NEIGHBOURHOOD_DEPTH = 2
NEIGHBOURHOOD_NODES = 40
_TYPE_COLORS = {
    "person": "#417690",
    "organization": "#e0a040",
    "project": "#5b8c5a",
    "technology": "#8a6bb1",
    "concept": "#79aec8",
    "location": "#c77c48",
}


def memory_entity_context(*, project: Project, memory_ids: list[UUID]) -> dict[UUID, list[Entity]]:
    """The `admin_memory_entities` hook: each memory's entities (deleted memories included,
    so a resolved contradiction still shows what it was about), most relevant first."""
    links = (
        EntityMemory.objects.filter(project=project, memory_id__in=memory_ids)
        .select_related("entity")
        .order_by("-relevance", "entity__name")
    )
    found: dict[UUID, list[Entity]] = {pk: [] for pk in memory_ids}
    for link in links:
        found[link.memory_id].append(link.entity)
    return found


def _entity_url(entity_id: int) -> str:
    return reverse("admin:entities_entity_change", args=[entity_id])


def neighbourhood_svg(
    subgraph: Subgraph, *, size: int = 520, url: Callable[[int], str] = _entity_url
) -> SafeString:
    """The subgraph around an entity as an SVG picture: the entity in the middle, each hop a
    ring further out, relations as lines (dashed once closed) named on hover, every node a
    link to its entity."""
    middle = size / 2
    rings: dict[int, list[Any]] = {}
    for node in subgraph.nodes:
        rings.setdefault(node.depth, []).append(node)
    depth_count = max(rings, default=0) or 1
    spacing = (middle - 50) / depth_count
    place: dict[int, tuple[float, float]] = {}
    for depth, nodes in rings.items():
        for index, node in enumerate(nodes):
            angle = 2 * math.pi * index / len(nodes) + depth * 0.4
            radius = depth * spacing
            place[node.id] = (middle + radius * math.cos(angle), middle + radius * math.sin(angle))
    now = timezone.now()
    marks = []
    for edge in subgraph.edges:
        if edge.source_id not in place or edge.target_id not in place:
            continue
        (x1, y1), (x2, y2) = place[edge.source_id], place[edge.target_id]
        closed = edge.valid_to is not None and edge.valid_to <= now
        dash = ' stroke-dasharray="4 3"' if closed else ""
        marks.append(
            f'<line class="edge" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="#999" stroke-width="{1 + 2 * edge.strength:.1f}"{dash}>'
            f"<title>{escape(edge.relation_type)} ({edge.strength:.2f})</title></line>"
        )
    for node in subgraph.nodes:
        x, y = place[node.id]
        color = _TYPE_COLORS.get(node.entity_type, "#888")
        radius = 14 if node.depth == 0 else 9
        marks.append(
            f'<a href="{escape(url(node.id))}"><circle class="node" cx="{x:.1f}" cy="{y:.1f}" '
            f'r="{radius}" fill="{color}"><title>{escape(node.name)} ({node.entity_type})'
            f'</title></circle><text x="{x:.1f}" y="{y + radius + 12:.1f}" '
            f'text-anchor="middle" font-family="sans-serif" font-size="11">'
            f"{escape(node.name[:24])}</text></a>"
        )
    return mark_safe(  # names and types went through escape()
        f'<svg class="chart graph" data-points="{len(subgraph.nodes)}" role="img" '
        f'aria-label="neighbourhood of {escape(subgraph.center.name)}" width="{size}" '
        f'height="{size}" viewBox="0 0 {size} {size}">{"".join(marks)}</svg>'
    )


class OutgoingRelationInline(admin.TabularInline):
    model = Relation
    fk_name = "source"
    extra = 0
    fields = ["relation_type", "target", "strength", "confidence", "valid_from", "valid_to"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # relations come through the graph services (API, extraction)


@admin.register(Entity)
class EntityAdmin(ProjectScopedAdmin):
    list_display = ["name", "entity_type", "project", "created_at", "updated_at"]
    list_filter = ["project", "entity_type"]
    search_fields = ["name", "normalized_name", "description"]
    readonly_fields = [
        "neighbourhood",
        "linked_memories",
        "normalized_name",
        "lookup_keys",
        "created_at",
        "updated_at",
    ]
    exclude = ["embedding"]
    inlines = [OutgoingRelationInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # entities come through the graph services (API, MCP, extraction)

    @admin.display(description=f"neighbourhood ({NEIGHBOURHOOD_DEPTH} hops)")
    def neighbourhood(self, entity: Entity) -> SafeString:
        if entity.pk is None:
            return mark_safe("")
        subgraph = entity_subgraph(
            project=entity.project,
            entity_id=entity.pk,
            depth=NEIGHBOURHOOD_DEPTH,
            max_nodes=NEIGHBOURHOOD_NODES,
        )
        return neighbourhood_svg(subgraph)

    @admin.display(description="memories")
    def linked_memories(self, entity: Entity) -> SafeString:
        links = (
            EntityMemory.objects.filter(project_id=entity.project_id, entity=entity)
            .select_related("memory")
            .order_by("-relevance")[:20]
        )
        rows = format_html_join(
            "",
            '<li><a href="{}">{}</a></li>',
            (
                (reverse("admin:memories_memory_change", args=[link.memory_id]), link.memory)
                for link in links
            ),
        )
        return format_html("<ul>{}</ul>", rows) if rows else mark_safe("none")


@admin.register(Relation)
class RelationAdmin(ProjectScopedAdmin):
    list_display = [
        "source",
        "relation_type",
        "target",
        "strength",
        "confidence",
        "valid_from",
        "valid_to",
        "project",
    ]
    list_filter = ["project", "relation_type", ("valid_to", admin.EmptyFieldListFilter)]
    search_fields = ["source__name", "target__name", "relation_type", "context"]
    raw_id_fields = ["source", "target"]
    readonly_fields = ["invalidated_at", "created_at", "updated_at"]
    list_select_related = ["project", "source", "target"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # relations come through relation_upsert (API, MCP, extraction)


@admin.register(EntityMemory)
class EntityMemoryAdmin(ProjectScopedAdmin):
    list_display = ["entity", "memory", "relevance", "project", "created_at"]
    list_filter = ["project"]
    raw_id_fields = ["entity", "memory"]
    list_select_related = ["project", "entity", "memory"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # links come through the graph services
