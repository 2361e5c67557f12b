"""The SQL-native server's request fields, checked; names as its clients send them."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from memories.api.serializers import ScopeSerializer
from memories.models import MemoryType
from memories.selectors.filters import MAX_ENTITY_ID, MemoryFilters
from memories.selectors.search import MODES
from memories.selectors.search.dispatch import MAX_OFFSET
from platformcore.lib.fields import CommaListField, StrictCharField, StrictFloatField

DEFAULT_LIMIT = 20  # the server's SEARCH_DEFAULT_LIMIT


class MemoryFiltersSerializer(ScopeSerializer):
    """§5.6's filters, shared by the list and search endpoints."""

    memory_types = CommaListField(
        child=serializers.ChoiceField(choices=MemoryType.choices), required=False, default=list
    )
    types = CommaListField(
        child=serializers.ChoiceField(choices=MemoryType.choices), required=False, default=list
    )
    tags = CommaListField(child=StrictCharField(), required=False, default=list)
    min_confidence = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    after_date = serializers.DateTimeField(required=False)
    before_date = serializers.DateTimeField(required=False)
    entity_id = serializers.IntegerField(min_value=1, max_value=MAX_ENTITY_ID, required=False)
    source = StrictCharField(required=False)
    limit = serializers.IntegerField(min_value=1, required=False, default=DEFAULT_LIMIT)
    offset = serializers.IntegerField(min_value=0, max_value=MAX_OFFSET, default=0)

    def validate_limit(self, value: int) -> int:
        if value > settings.MEMORY_MAX_PAGE_SIZE:
            raise serializers.ValidationError(f"at most {settings.MEMORY_MAX_PAGE_SIZE}")
        return value


class SearchSerializer(MemoryFiltersSerializer):
    q = StrictCharField(max_length=2000)
    mode = serializers.ChoiceField(choices=list(MODES), default="hybrid")


class ConsolidateSerializer(serializers.Serializer):
    similarity_threshold = StrictFloatField(min_value=0.0, max_value=1.0, default=0.85)
    dry_run = serializers.BooleanField(default=False)


def filters_of(data: dict[str, Any]) -> MemoryFilters:
    """The platform's filters of §5.6's: `types` is an alias of `memory_types`,
    `min_confidence` is the effective (decayed) confidence, as the server defines it."""
    return MemoryFilters(
        user_id=data.get("user_id") or None,
        agent_id=data.get("agent_id") or None,
        run_id=data.get("run_id") or None,
        memory_types=list(data["memory_types"] or data["types"]),
        tags=data["tags"],
        source=data.get("source"),
        min_confidence=data.get("min_confidence"),
        created_after=data.get("after_date"),
        created_before=data.get("before_date"),
        entity_ids=[data["entity_id"]] if data.get("entity_id") else [],
    )
