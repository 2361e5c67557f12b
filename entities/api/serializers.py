"""REST input and output shapes for the knowledge graph. Values are validated by services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from entities.models import EntityType
from entities.representations import (  # noqa: F401 (the REST layer's output shapes)
    EdgeSerializer,
    EntityCreatedSerializer,
    EntityDetailSerializer,
    EntityRefSerializer,
    EntitySerializer,
    GraphNodeSerializer,
    MemoryEdgeSerializer,
    MemoryNodeSerializer,
    RelationSerializer,
)
from entities.scope import GRAPH_SCOPE_FIELDS, GraphScope
from entities.services.entities import EntitySpec
from entities.services.relations import NamedRelation, RelationSpec
from memories.api.serializers import ScopeSerializer
from platformcore.lib.fields import (
    MAX_PAGE_OFFSET,
    CommaListField,
    StrictCharField,
    StrictFloatField,
)


class QueryBooleanField(serializers.BooleanField):
    """A query-string boolean whose default applies when absent (DRF's form handling would
    read an absent checkbox as false)."""

    def get_value(self, dictionary: Any) -> Any:
        if self.field_name not in dictionary:
            return serializers.empty
        return super().get_value(dictionary)


class PageQuerySerializer(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, required=False)
    offset = serializers.IntegerField(
        min_value=0, max_value=MAX_PAGE_OFFSET, required=False, default=0
    )

    def validate_limit(self, value: int) -> int:
        if value > settings.MEMORY_MAX_PAGE_SIZE:
            raise serializers.ValidationError(f"at most {settings.MEMORY_MAX_PAGE_SIZE}")
        return value


def read_scope(data: dict[str, Any]) -> GraphScope | None:
    """The scope a read gives (None: every graph): its own and the project-wide graph."""
    scope = GraphScope.of(data)
    return None if scope.is_shared else scope


def write_scope(data: dict[str, Any]) -> GraphScope:
    """The graph a write goes to: the scope given, else the project-wide graph."""
    return GraphScope.of(data)


ENTITY_TYPE_HELP = (
    "built in: " + ", ".join(EntityType.values) + "; any other lower-case identifier "
    "(a project's own type, e.g. `team`) is stored as given"
)
TAGS_HELP = "tags of the entity (listed in the project's tag registry, /api/v1/tags/)"


# --- entities ------------------------------------------------------------------------------


class EntityWriteSerializer(ScopeSerializer):
    """`user_id` / `agent_id` / `run_id`: whose graph (none: the project-wide graph)."""

    name = StrictCharField(max_length=255)
    entity_type = StrictCharField(
        max_length=100, default=EntityType.UNKNOWN, help_text=ENTITY_TYPE_HELP
    )
    description = StrictCharField(required=False, allow_blank=True, default="")
    aliases = serializers.ListField(
        child=StrictCharField(max_length=255), required=False, default=list
    )
    metadata = serializers.DictField(required=False, default=dict)
    tags = serializers.ListField(
        child=StrictCharField(max_length=100), required=False, default=list, help_text=TAGS_HELP
    )


def entity_spec(data: dict[str, Any], scope: GraphScope | None = None) -> EntitySpec:
    """An EntitySpec from an EntityWriteSerializer's data (scope: the item's, or `scope`)."""
    values = {k: v for k, v in data.items() if k not in GRAPH_SCOPE_FIELDS}
    return EntitySpec(**values, scope=scope or write_scope(data))


class EntityUpdateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=255, required=False)
    entity_type = StrictCharField(max_length=100, required=False, help_text=ENTITY_TYPE_HELP)
    description = StrictCharField(required=False, allow_blank=True)
    aliases = serializers.ListField(child=StrictCharField(max_length=255), required=False)
    metadata = serializers.DictField(required=False)
    tags = serializers.ListField(child=StrictCharField(max_length=100), required=False)


class EntityListQuerySerializer(ScopeSerializer, PageQuerySerializer):
    q = StrictCharField(required=False, allow_blank=True, default="")
    entity_type = CommaListField(
        child=StrictCharField(max_length=100), required=False, default=list
    )
    tags = CommaListField(child=StrictCharField(max_length=100), required=False, default=list)
    match = serializers.ChoiceField(choices=["name", "semantic"], default="name")


class EntityScopeQuerySerializer(ScopeSerializer):
    """A read in one scope's graph (and the project-wide one)."""


class EntityDeleteQuerySerializer(serializers.Serializer):
    cascade_memories = serializers.BooleanField(required=False, default=False)


# --- relations -----------------------------------------------------------------------------


class RelationFieldsSerializer(serializers.Serializer):
    relation_type = StrictCharField(max_length=100)
    strength = StrictFloatField(min_value=0.0, max_value=1.0, default=0.5)
    confidence = StrictFloatField(min_value=0.0, max_value=1.0, default=1.0)
    context = StrictCharField(required=False, allow_blank=True, default="")
    metadata = serializers.DictField(required=False, default=dict)
    valid_from = serializers.DateTimeField(required=False, allow_null=True, default=None)
    valid_to = serializers.DateTimeField(required=False, allow_null=True, default=None)

    @staticmethod
    def spec_from(data: dict[str, Any]) -> RelationSpec:
        names = ("relation_type", "strength", "confidence", "context", "metadata")
        return RelationSpec(
            **{name: data[name] for name in names},
            valid_from=data.get("valid_from"),
            valid_to=data.get("valid_to"),
        )


class RelationCreateSerializer(ScopeSerializer, RelationFieldsSerializer):
    """By id (`source_id`, `target_id`) or by name (`source`, `target`)."""

    source_id = serializers.IntegerField(required=False)
    target_id = serializers.IntegerField(required=False)
    source = StrictCharField(max_length=255, required=False)
    target = StrictCharField(max_length=255, required=False)

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        for end in ("source", "target"):
            if (f"{end}_id" in data) == (end in data):
                raise serializers.ValidationError({end: [f"give exactly one of {end}, {end}_id"]})
        return data


class NamedRelationSerializer(RelationFieldsSerializer):
    source = StrictCharField(max_length=255)
    target = StrictCharField(max_length=255)
    source_type = StrictCharField(max_length=100, default=EntityType.UNKNOWN)
    target_type = StrictCharField(max_length=100, default=EntityType.UNKNOWN)

    @classmethod
    def named(cls, data: dict[str, Any]) -> NamedRelation:
        return NamedRelation(
            source=data["source"],
            target=data["target"],
            spec=cls.spec_from(data),
            source_type=data["source_type"],
            target_type=data["target_type"],
        )


class GraphBulkSerializer(ScopeSerializer):
    """`user_id` / `agent_id` / `run_id`: whose graph all of it goes to."""

    entities = EntityWriteSerializer(many=True, required=False, default=list)
    relations = NamedRelationSerializer(many=True, required=False, default=list)

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if not data["entities"] and not data["relations"]:
            raise serializers.ValidationError({"entities": ["give entities or relations"]})
        return data


class RelationDeleteByNameSerializer(ScopeSerializer):
    relations = serializers.ListField(
        child=serializers.DictField(child=StrictCharField()), min_length=1
    )


class RelationListQuerySerializer(ScopeSerializer, PageQuerySerializer):
    entity_id = serializers.IntegerField(required=False)
    relation_type = CommaListField(child=StrictCharField(), required=False, default=list)
    as_of = serializers.DateTimeField(required=False)
    include_closed = serializers.BooleanField(required=False, default=False)


class RelationCloseSerializer(serializers.Serializer):
    valid_to = serializers.DateTimeField(required=False, allow_null=True, default=None)


# --- traversal -----------------------------------------------------------------------------


class TraversalQuerySerializer(serializers.Serializer):
    depth = serializers.IntegerField(min_value=0, max_value=5, default=1)
    direction = serializers.ChoiceField(choices=["out", "in", "both"], default="both")
    min_strength = StrictFloatField(min_value=0.0, max_value=1.0, default=0.0)
    max_nodes = serializers.IntegerField(min_value=1, max_value=1000, default=100)


class EntityGraphQuerySerializer(ScopeSerializer, TraversalQuerySerializer):
    relation_type = CommaListField(child=StrictCharField(), required=False, default=list)
    as_of = serializers.DateTimeField(required=False, allow_null=True, default=None)
    include_memories = QueryBooleanField(default=True)
    memories_per_node = serializers.IntegerField(min_value=0, max_value=50, default=5)


class MemoryTraverseQuerySerializer(ScopeSerializer, TraversalQuerySerializer):
    """`user_id` / `agent_id` / `run_id`: the walk starts in that scope and stays inside it."""

    depth = serializers.IntegerField(min_value=0, max_value=5, default=2)
    link_type = CommaListField(child=StrictCharField(), required=False, default=list)
    strategy = serializers.ChoiceField(choices=["bfs", "dfs"], default="bfs")
    time_budget_ms = serializers.IntegerField(
        min_value=1, max_value=60_000, required=False, allow_null=True, default=None
    )
    memory_type = CommaListField(child=StrictCharField(), required=False, default=list)
    tags = CommaListField(child=StrictCharField(), required=False, default=list)
    include_parent_links = QueryBooleanField(default=False)


class ExportQuerySerializer(serializers.Serializer):
    as_of = serializers.DateTimeField(required=False, allow_null=True, default=None)
    include_closed = serializers.BooleanField(required=False, default=False)
    node_types = CommaListField(
        child=StrictCharField(),
        required=False,
        default=list,
        help_text="kinds of node to export (entity, memory, episode, document, chunk, or all); "
        "given, the export is of typed nodes keyed `<type>:<id>`",
    )
    edge_types = CommaListField(child=StrictCharField(), required=False, default=list)
    max_nodes = serializers.IntegerField(min_value=1, max_value=100_000, default=100_000)


class CrossGraphQuerySerializer(ScopeSerializer, TraversalQuerySerializer):
    node = StrictCharField(help_text="the center: `<type>:<id>`, e.g. `document:5b1c…`")
    node_types = CommaListField(
        child=StrictCharField(),
        required=False,
        default=list,
        help_text="kinds walked and shown: entity, memory, episode, document, chunk (all)",
    )
    edge_types = CommaListField(
        child=StrictCharField(),
        required=False,
        default=list,
        help_text="relation, about, link, contains, mentions, cites (all)",
    )
    as_of = serializers.DateTimeField(required=False, allow_null=True, default=None)


class AnalysisQuerySerializer(ScopeSerializer):
    """`user_id` / `agent_id` / `run_id`: that scope's graph and memory links only."""

    top = serializers.IntegerField(min_value=1, max_value=100, default=10)


# --- tags ----------------------------------------------------------------------------------


class TagListQuerySerializer(PageQuerySerializer):
    q = StrictCharField(required=False, allow_blank=True, default="", max_length=100)


class TagDescribeSerializer(serializers.Serializer):
    description = StrictCharField(allow_blank=True, max_length=2000)
