"""How entities, relations and graphs look to every client: one representation, used by the
REST API's responses and the MCP tools alike. Input validation lives in the REST layer
(`entities.api.serializers`)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import serializers

from entities.models import Entity, Relation
from entities.selectors.graph import CrossExport, CrossGraph, Edge, Node
from entities.selectors.tags import TagInfo
from entities.selectors.traversal import MemoryGraph, Subgraph
from memories.representations import MemorySerializer


class EntitySerializer(serializers.ModelSerializer):
    relation_count = serializers.SerializerMethodField()
    has_embedding = serializers.SerializerMethodField()

    class Meta:
        model = Entity
        fields = [
            "id",
            "name",
            "entity_type",
            "description",
            "aliases",
            "metadata",
            "tags",
            "user_id",
            "agent_id",
            "run_id",
            "mention_count",
            "first_seen",
            "last_seen",
            "has_embedding",
            "relation_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_relation_count(self, entity: Entity) -> int | None:
        return getattr(entity, "relation_count", None)

    def get_has_embedding(self, entity: Entity) -> bool | None:
        if "embedding" in entity.get_deferred_fields():
            return None
        return entity.embedding is not None


class EntityRefSerializer(serializers.ModelSerializer):
    class Meta:
        model = Entity
        fields = ["id", "name", "entity_type"]
        read_only_fields = fields


class EntityCreatedSerializer(EntitySerializer):
    created = serializers.SerializerMethodField()

    class Meta(EntitySerializer.Meta):
        fields = [*EntitySerializer.Meta.fields, "created"]
        read_only_fields = fields

    def get_created(self, entity: Entity) -> bool:
        return bool(self.context.get("created"))


class RelationSerializer(serializers.ModelSerializer):
    source = EntityRefSerializer()
    target = EntityRefSerializer()
    valid_now = serializers.SerializerMethodField()

    class Meta:
        model = Relation
        fields = [
            "id",
            "source",
            "target",
            "relation_type",
            "strength",
            "confidence",
            "context",
            "metadata",
            "user_id",
            "agent_id",
            "run_id",
            "valid_from",
            "valid_to",
            "invalidated_at",
            "valid_now",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_valid_now(self, relation: Relation) -> bool:
        """Valid now: started and not ended."""
        now = timezone.now()
        return relation.valid_from <= now and (relation.valid_to is None or relation.valid_to > now)


class EdgeSerializer(serializers.Serializer):
    """A relation inside a subgraph: endpoints by id only."""

    id = serializers.IntegerField()
    source = serializers.IntegerField(source="source_id")
    target = serializers.IntegerField(source="target_id")
    relation_type = serializers.CharField()
    strength = serializers.FloatField()
    confidence = serializers.FloatField()
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    invalidated_at = serializers.DateTimeField(allow_null=True)


class EntityDetailSerializer(EntitySerializer):
    relations = serializers.SerializerMethodField()

    class Meta(EntitySerializer.Meta):
        fields = [*EntitySerializer.Meta.fields, "relations"]
        read_only_fields = fields

    def get_relations(self, entity: Entity) -> Any:
        return RelationSerializer(self.context.get("relations", []), many=True).data


class GraphNodeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    entity_type = serializers.CharField()
    description = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())
    depth = serializers.IntegerField()
    memories = serializers.SerializerMethodField()

    def get_memories(self, node: Any) -> Any:
        memories = self.context.get("memories")
        if memories is None:
            return None
        return MemorySerializer(memories.get(node.id, []), many=True).data


class MemoryNodeSerializer(MemorySerializer):
    depth = serializers.IntegerField()

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "depth"]
        read_only_fields = fields


class MemoryEdgeSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    from_id = serializers.UUIDField(source="from_memory_id")
    to_id = serializers.UUIDField(source="to_memory_id")
    link_type = serializers.CharField()
    strength = serializers.FloatField()


def subgraph_body(subgraph: Subgraph, *, include_memories: bool) -> dict[str, Any]:
    """An entity's neighbourhood: its center, the nodes (with their most relevant memories
    when `include_memories`) and the relations among them by endpoint id."""
    memories = subgraph.memories if include_memories else None
    return {
        "center": EntityRefSerializer(subgraph.center).data,
        "nodes": GraphNodeSerializer(
            subgraph.nodes, many=True, context={"memories": memories}
        ).data,
        "edges": EdgeSerializer(subgraph.edges, many=True).data,
    }


def memory_graph_body(graph: MemoryGraph) -> dict[str, Any]:
    """A walk over memory links: its start, the memories reached (with their depth), links."""
    return {
        "center": str(graph.center.pk),
        "nodes": MemoryNodeSerializer(graph.nodes, many=True).data,
        "edges": MemoryEdgeSerializer(graph.edges, many=True).data,
        "strategy": graph.strategy,
        "truncated": graph.truncated,  # the time budget ended the walk early
    }


def tag_body(tag: TagInfo) -> dict[str, Any]:
    """A tag of the project's registry: its description and how many live memories and
    entities carry it (`registered`: it has a description row)."""
    return {
        "name": tag.name,
        "description": tag.description,
        "memory_count": tag.memory_count,
        "entity_count": tag.entity_count,
        "registered": tag.registered,
    }


def node_body(node: Node) -> dict[str, Any]:
    return {
        "key": node.key,
        "type": node.kind,
        "id": node.id if isinstance(node.id, int) else str(node.id),
        "label": node.label,
        "subtype": node.subtype,
        "depth": node.depth,
    }


def edge_body(edge: Edge) -> dict[str, Any]:
    return {
        "type": edge.kind,
        "source": edge.source,
        "target": edge.target,
        "label": edge.label,
        "weight": round(edge.weight, 6),
        "id": edge.id,
    }


def cross_graph_body(graph: CrossGraph) -> dict[str, Any]:
    """A neighbourhood across kinds: nodes keyed `<type>:<id>`, typed edges between keys."""
    return {
        "center": node_body(graph.center),
        "nodes": [node_body(node) for node in graph.nodes],
        "edges": [edge_body(edge) for edge in graph.edges],
        "truncated": graph.truncated,
    }


def cross_export_body(project: Any, export: CrossExport) -> dict[str, Any]:
    nodes = [{k: v for k, v in node_body(n).items() if k != "depth"} for n in export.nodes]
    return {
        "project": project.slug,
        "nodes": nodes,
        "edges": [edge_body(edge) for edge in export.edges],
        "truncated": export.truncated,
    }
