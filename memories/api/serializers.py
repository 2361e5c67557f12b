"""REST input and output shapes for memories. Validation of values lives in the services."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework import serializers

from memories.models import LinkType, Memory, MemoryHistory, MemoryLink, MemoryState, MemoryType
from memories.selectors.filters import (
    MAX_ENTITY_FILTERS,
    MAX_ENTITY_ID,
    effective_confidence_of,
)
from memoryplatform.lib.fields import (
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


class MemoryCreateSerializer(ScopeSerializer, MemoryWriteSerializer):
    entity_names = serializers.ListField(
        child=StrictCharField(max_length=255), required=False, default=list
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


class FilterExpressionField(serializers.Field):
    """A seed-003 filter expression: a JSON object, or a JSON string in a query parameter.
    Its meaning is checked by the filter-language translator (400 naming the bad node)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, str):
            try:
                data = json.loads(data)
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


class PaginationSerializer(FieldsBuiltOnce, serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, required=False)
    offset = serializers.IntegerField(min_value=0, required=False, default=0)

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


class MemorySerializer(serializers.ModelSerializer):
    effective_confidence = serializers.SerializerMethodField()
    has_embedding = serializers.SerializerMethodField()

    class Meta:
        model = Memory
        fields = [
            "id",
            "content",
            "memory_type",
            "tags",
            "confidence",
            "effective_confidence",
            "importance",
            "source",
            "context",
            "metadata",
            "user_id",
            "agent_id",
            "run_id",
            "content_hash",
            "token_count",
            "has_embedding",
            "access_count",
            "last_accessed_at",
            "state",
            "decay_score",
            "pinned",
            "expires_at",
            "deleted_at",
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_effective_confidence(self, memory: Memory) -> float:
        value = getattr(memory, "effective_confidence", None)  # annotated by selectors
        return round(value if value is not None else effective_confidence_of(memory), 6)

    def get_has_embedding(self, memory: Memory) -> bool:
        annotated = getattr(memory, "has_vector", None)  # set by memory_queryset
        return bool(annotated) if annotated is not None else memory.embedding is not None

    def to_representation(self, memory: Memory) -> dict[str, Any]:
        """The fields above, written out. DRF's own path introspects the model for every
        serializer (ModelSerializer builds its fields anew each time) and then calls one
        field object per value: ~1.9 ms for a page of 10, most of a search's serialisation;
        this is ~0.2 ms. Same output as DRF's path (tests compare them, field by field).
        Subclasses add their fields with `extra_representation`."""
        return {
            "id": str(memory.id),
            "content": memory.content,
            "memory_type": memory.memory_type,
            "tags": [str(tag) for tag in memory.tags],
            "confidence": float(memory.confidence),
            "effective_confidence": self.get_effective_confidence(memory),
            "importance": float(memory.importance),
            "source": memory.source,
            "context": memory.context,
            "metadata": memory.metadata,
            "user_id": memory.user_id,
            "agent_id": memory.agent_id,
            "run_id": memory.run_id,
            "content_hash": memory.content_hash,
            "token_count": int(memory.token_count),
            "has_embedding": self.get_has_embedding(memory),
            "access_count": int(memory.access_count),
            "last_accessed_at": _datetime(memory.last_accessed_at),
            "state": memory.state,
            "decay_score": float(memory.decay_score),
            "pinned": bool(memory.pinned),
            "expires_at": _datetime(memory.expires_at),
            "deleted_at": _datetime(memory.deleted_at),
            "version": int(memory.version),
            "created_at": _datetime(memory.created_at),
            "updated_at": _datetime(memory.updated_at),
        } | self.extra_representation(memory)

    def extra_representation(self, memory: Memory) -> dict[str, Any]:
        """A subclass's own fields (those after MemorySerializer's in its Meta.fields), by
        DRF's field path unless the subclass writes them out itself."""
        names = self.Meta.fields[len(MemorySerializer.Meta.fields) :]
        if not names:
            return {}
        fields = self.fields
        extra = {}
        for name in names:
            value = fields[name].get_attribute(memory)
            extra[name] = None if value is None else fields[name].to_representation(value)
        return extra


_DATETIME = serializers.DateTimeField()  # DRF's format (ISO 8601, "Z" for UTC), unbound


def _datetime(value: Any) -> str | None:
    return None if value is None else _DATETIME.to_representation(value)


class MemoryCreatedSerializer(MemorySerializer):
    created = serializers.SerializerMethodField()

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "created"]
        read_only_fields = fields

    def get_created(self, memory: Memory) -> bool:
        return bool(self.context.get("created"))


class MemoryPageSerializer(serializers.Serializer):
    results = MemorySerializer(many=True)
    count = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


class HistorySerializer(serializers.ModelSerializer):
    memory_id = serializers.UUIDField()
    is_deleted = serializers.SerializerMethodField()

    class Meta:
        model = MemoryHistory
        fields = [
            "id",
            "memory_id",
            "event",
            "old_content",
            "new_content",
            "old_values",
            "new_values",
            "actor",
            "user_id",
            "agent_id",
            "run_id",
            "is_deleted",
            "created_at",
        ]
        read_only_fields = fields

    def get_is_deleted(self, entry: MemoryHistory) -> bool:
        return entry.event == "DELETE"


class LinkSerializer(serializers.ModelSerializer):
    from_id = serializers.UUIDField(source="from_memory_id")
    to_id = serializers.UUIDField(source="to_memory_id")

    class Meta:
        model = MemoryLink
        fields = ["id", "from_id", "to_id", "link_type", "strength", "metadata", "created_at"]
        read_only_fields = fields


class LinkCreateSerializer(serializers.Serializer):
    to_id = serializers.UUIDField()
    link_type = serializers.ChoiceField(choices=LinkType.choices, default=LinkType.RELATES_TO)
    strength = StrictFloatField(min_value=0.0, max_value=1.0, default=1.0)
    metadata = serializers.DictField(required=False, default=dict)


class DeletedCountSerializer(serializers.Serializer):
    deleted = serializers.IntegerField()


def without_empty(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}
