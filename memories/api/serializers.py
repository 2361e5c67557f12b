"""REST input and output shapes for memories. Validation of values lives in the services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from memories.models import LinkType, Memory, MemoryLayer, MemoryState, MemoryType
from memories.representations import (  # noqa: F401 (the REST layer's output shapes)
    HistorySerializer,
    LinkSerializer,
    MemorySerializer,
)
from memories.selectors.filters import (
    MAX_ENTITY_FILTERS,
    MAX_ENTITY_ID,
)
from platformcore.lib import json_input
from platformcore.lib.fields import (
    MAX_PAGE_OFFSET,
    CommaListField,
    FieldsBuiltOnce,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
)


class ScopeSerializer(serializers.Serializer):
    user_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)
    agent_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)
    run_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)


class MemoryWriteSerializer(serializers.Serializer):
    content = StrictCharField(trim_whitespace=False)
    memory_type = serializers.ChoiceField(choices=MemoryType.choices, required=False)
    tags = serializers.ListField(child=StrictCharField(max_length=100), required=False)
    confidence = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    importance = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    source = StrictCharField(max_length=200, required=False, allow_blank=True)
    context = StrictCharField(required=False, allow_blank=True)
    metadata = serializers.DictField(required=False)
    pinned = StrictBooleanField(required=False)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    occurred_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="when what it says happened or was said (an imported conversation's date); "
        "dates in a search question are matched against it. Default: when it is stored",
    )
    layer = serializers.ChoiceField(
        choices=MemoryLayer.choices,
        required=False,
        help_text="short_term, long_term, episodic, semantic or documentary; default: "
        "short_term with a run_id, episodic for type episode, else long_term (docs/episodes.md)",
    )


class MemoryCreateSerializer(ScopeSerializer, MemoryWriteSerializer):
    entity_names = serializers.ListField(
        child=StrictCharField(max_length=255), required=False, default=list
    )
    episode_id = serializers.UUIDField(
        required=False,
        allow_null=True,
        help_text="the episode it belongs to; default: its run's open episode, if any",
    )


class MemoryBulkCreateSerializer(serializers.Serializer):
    memories = MemoryCreateSerializer(many=True, allow_empty=False, max_length=1000)
    near_duplicates = serializers.ChoiceField(
        choices=["inline", "consolidation"],
        required=False,
        help_text="inline: near-duplicates merge in this write (`created: false`); "
        "consolidation: they are stored and the consolidation job merges them later (faster). "
        "Default: the project's `bulk_near_duplicates`, else MEMORY_BULK_NEAR_DUPLICATES.",
    )
    vector_index = serializers.ChoiceField(
        choices=["inline", "deferred"],
        required=False,
        help_text="inline: the new memories enter the HNSW index in this write; deferred: a "
        "background job adds them (faster writes; searches find them meanwhile by exact "
        "comparison). Default: the project's `bulk_vector_index`, else MEMORY_BULK_VECTOR_INDEX.",
    )


class MemoryBulkCreatedSerializer(serializers.Serializer):
    results = serializers.ListField(child=serializers.DictField())
    created = serializers.IntegerField()
    existing = serializers.IntegerField(help_text="exact duplicates and merged near-duplicates")


class MemoryUpdateSerializer(MemoryWriteSerializer):
    """PATCH/PUT body; scope fields are rejected by the service with a named error."""

    content = StrictCharField(required=False, trim_whitespace=False)
    text = StrictCharField(required=False, trim_whitespace=False, help_text="mem0 alias of content")
    user_id = StrictCharField(required=False, allow_null=True)
    agent_id = StrictCharField(required=False, allow_null=True)
    run_id = StrictCharField(required=False, allow_null=True)
    supersedes = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        max_length=100,
        help_text="ids of older memories this one replaces (soft-deleted and linked)",
    )


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": True,
        "description": "AND/OR/NOT filter expression (docs/search.md, Filters)",
    }
)
class FilterExpressionField(serializers.Field):
    """A mem0-style filter expression: a JSON object, or a JSON string in a query parameter.
    Its meaning is checked by the filter-language translator (400 naming the bad node)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, str):
            try:
                data = json_input.loads(data)
            except json_input.JsonInputError as exc:
                raise serializers.ValidationError(str(exc)) from exc
            except ValueError as exc:
                raise serializers.ValidationError("must be a JSON object") from exc
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be a JSON object")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class MemoryFilterSerializer(FieldsBuiltOnce, ScopeSerializer):
    filters = FilterExpressionField(required=False, help_text="AND/OR/NOT filter expression")
    memory_type = CommaListField(
        child=serializers.ChoiceField(choices=MemoryType.choices), required=False, default=list
    )
    tags = CommaListField(child=StrictCharField(), required=False, default=list)
    source = StrictCharField(required=False)
    state = CommaListField(
        child=serializers.ChoiceField(choices=[*MemoryState.values, "all"]),
        required=False,
        default=list,
        help_text="only these lifecycle states (active, dormant, archived); default: every "
        "state of a live memory (decay ranks, it never hides)",
    )
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    min_confidence = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    pinned = serializers.BooleanField(required=False, allow_null=True, default=None)
    entity_ids = CommaListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ENTITY_ID),
        required=False,
        max_length=MAX_ENTITY_FILTERS,
        help_text="linked to all these knowledge-graph entities (ids)",
    )
    entities = CommaListField(
        child=StrictCharField(max_length=255),
        required=False,
        max_length=MAX_ENTITY_FILTERS,
        help_text="linked to all these entities (names or aliases, case-insensitive; "
        "comma-separated in a query string)",
    )
    layer = CommaListField(
        child=serializers.ChoiceField(choices=MemoryLayer.choices),
        required=False,
        default=list,
        help_text="only memories of these layers (short_term, long_term, episodic, semantic, "
        "documentary)",
    )
    episode_id = serializers.UUIDField(required=False, help_text="stored during this episode")


class PaginationSerializer(FieldsBuiltOnce, serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, required=False)
    offset = serializers.IntegerField(
        min_value=0, max_value=MAX_PAGE_OFFSET, required=False, default=0
    )

    def validate_limit(self, value: int) -> int:
        if value > settings.MEMORY_MAX_PAGE_SIZE:
            raise serializers.ValidationError(f"at most {settings.MEMORY_MAX_PAGE_SIZE}")
        return value


class MemoryListQuerySerializer(MemoryFilterSerializer, PaginationSerializer):
    include_deleted = serializers.BooleanField(
        required=False,
        default=False,
        help_text="also deleted and pruned memories (admin keys only); `deleted_at` says when",
    )


class MemoryCreatedSerializer(MemorySerializer):
    created = serializers.SerializerMethodField()

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "created"]
        read_only_fields = fields

    def get_created(self, memory: Memory) -> bool:
        return bool(self.context.get("created"))

    def extra_representation(self, memory: Memory) -> dict[str, Any]:
        """Written out: DRF's field path would build every field of the serializer for this
        one, on every stored memory."""
        return {"created": self.get_created(memory)}


@extend_schema_serializer(many=False)  # one page object, never a list of them
class MemoryPageSerializer(serializers.Serializer):
    results = MemorySerializer(many=True)
    count = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


class LinkCreateSerializer(serializers.Serializer):
    to_id = serializers.UUIDField()
    link_type = serializers.ChoiceField(choices=LinkType.choices, default=LinkType.RELATES_TO)
    strength = StrictFloatField(min_value=0.0, max_value=1.0, default=1.0)
    metadata = serializers.DictField(required=False, default=dict)


class DeletedCountSerializer(serializers.Serializer):
    deleted = serializers.IntegerField()


def without_empty(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}
