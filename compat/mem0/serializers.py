"""Input shapes of mem0's API. Only what is used is declared: the other fields mem0's clients
may send (`custom_categories`, `async_mode`, ...) are accepted and ignored, as
docs/compat-mem0.md lists."""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_date, parse_datetime
from rest_framework import serializers

from memories.api.serializers import FilterExpressionField
from platformcore.lib.fields import StrictBooleanField, StrictCharField, StrictFloatField

FEEDBACK_VALUES = ("POSITIVE", "NEGATIVE", "VERY_NEGATIVE")
MAX_BATCH = 1000  # mem0's own limit on a batch update or delete
MAX_INSTRUCTIONS = 4000
MAX_FEEDBACK_REASON = 1000  # what the tool-feedback record keeps of a suggestion
MAX_ENTITY_PAGE = 1000


def default_page_size() -> int:
    return min(100, settings.MEMORY_MAX_PAGE_SIZE)  # mem0's default page is 100


class DateOrDateTimeField(serializers.Field):
    """An ISO 8601 date (its midnight, UTC) or date-time, as mem0 accepts both."""

    def to_internal_value(self, data: Any) -> datetime:
        if isinstance(data, str):
            parsed = parse_datetime(data)
            if parsed is None and (day := parse_date(data)) is not None:
                parsed = datetime.combine(day, time.min)
            if parsed is not None:
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        raise serializers.ValidationError("must be an ISO 8601 date or date-time")

    def to_representation(self, value: Any) -> Any:
        return value


class UnixTimeField(serializers.Field):
    """mem0's `timestamp`: Unix seconds (an integer or a float) of when the messages were
    said; the memories carry it as `occurred_at` and mem0's `created_at` shows it."""

    def to_internal_value(self, data: Any) -> datetime:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError("must be Unix seconds (a number)")
        try:
            return datetime.fromtimestamp(data, tz=UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise serializers.ValidationError("is not a time Unix seconds can give") from exc

    def to_representation(self, value: Any) -> Any:
        return value


class OptionalText(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)


class ScopeSerializer(serializers.Serializer):
    user_id = OptionalText(max_length=255)
    agent_id = OptionalText(max_length=255)
    run_id = OptionalText(max_length=255)
    app_id = OptionalText(max_length=255)


class AddSerializer(ScopeSerializer):
    messages = serializers.JSONField(help_text="a string, a message, or a list of messages")
    filters = FilterExpressionField(required=False, allow_null=True)
    metadata = serializers.DictField(required=False, allow_null=True)
    infer = StrictBooleanField(required=False, allow_null=True, default=True)
    custom_instructions = OptionalText(max_length=MAX_INSTRUCTIONS)
    agent_custom_instructions = OptionalText(max_length=MAX_INSTRUCTIONS)
    timestamp = UnixTimeField(required=False, allow_null=True)


class ListSerializer(serializers.Serializer):
    filters = FilterExpressionField(required=False, allow_null=True)
    start_date = DateOrDateTimeField(required=False, allow_null=True)
    end_date = DateOrDateTimeField(required=False, allow_null=True)
    categories = serializers.ListField(child=StrictCharField(), required=False, allow_null=True)


# a page whose offset (page - 1) * page_size still fits PostgreSQL's 64-bit OFFSET
MAX_PAGE = 10**12


class PageSerializer(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=MAX_PAGE, default=1)
    page_size = serializers.IntegerField(min_value=1, required=False)

    def validate_page_size(self, value: int) -> int:
        if value > settings.MEMORY_MAX_PAGE_SIZE:
            raise serializers.ValidationError(f"at most {settings.MEMORY_MAX_PAGE_SIZE}")
        return value


class EntityPageSerializer(PageSerializer):
    page_size = serializers.IntegerField(
        min_value=1, max_value=MAX_ENTITY_PAGE, default=MAX_ENTITY_PAGE
    )

    def validate_page_size(self, value: int) -> int:
        return value


class SearchSerializer(ListSerializer):
    query = StrictCharField(max_length=2000)
    top_k = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    threshold = StrictFloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True)
    # the configured cross-encoder (MEMORY_SEARCH_RERANKER) re-orders the best hits
    rerank = StrictBooleanField(required=False, allow_null=True)

    def validate_top_k(self, value: int | None) -> int | None:
        if value is not None and value > settings.MEMORY_MAX_PAGE_SIZE:
            raise serializers.ValidationError(f"at most {settings.MEMORY_MAX_PAGE_SIZE}")
        return value


class UpdateSerializer(serializers.Serializer):
    text = StrictCharField(required=False, trim_whitespace=False)
    metadata = serializers.DictField(required=False, allow_null=True)
    expiration_date = DateOrDateTimeField(required=False, allow_null=True)


class BatchUpdateItemSerializer(serializers.Serializer):
    memory_id = StrictCharField(max_length=64)
    text = StrictCharField(required=False, trim_whitespace=False)
    metadata = serializers.DictField(required=False, allow_null=True)


class BatchUpdateSerializer(serializers.Serializer):
    memories = BatchUpdateItemSerializer(many=True, allow_empty=False, max_length=MAX_BATCH)  # type: ignore[call-arg]


class BatchDeleteItemSerializer(serializers.Serializer):
    memory_id = StrictCharField(max_length=64)


class BatchDeleteSerializer(serializers.Serializer):
    memories = BatchDeleteItemSerializer(many=True, allow_empty=False, max_length=MAX_BATCH)  # type: ignore[call-arg]


class DeleteAllSerializer(ScopeSerializer):
    filters = OptionalText(max_length=4000, help_text="JSON (or mem0's Python literal)")


class FeedbackSerializer(serializers.Serializer):
    memory_id = StrictCharField(max_length=64)
    feedback = serializers.ChoiceField(choices=FEEDBACK_VALUES, required=False, allow_null=True)
    feedback_reason = OptionalText(max_length=MAX_FEEDBACK_REASON)


class ExportCreateSerializer(ScopeSerializer):
    schema = serializers.JSONField(help_text="accepted and returned; not used to shape data")
    filters = FilterExpressionField(required=False, allow_null=True)


class ExportGetSerializer(ScopeSerializer):
    memory_export_id = OptionalText(max_length=20_000)
    filters = FilterExpressionField(required=False, allow_null=True)


# --- mem0's open-source `Memory` (compat/mem0/oss.py): in-process, /v1/ wrapper, server ---
MAX_LIST = 1000  # memories one get_all may return (mem0's server lists at most 1,000)


def _limit(data: dict[str, Any], maximum: int) -> dict[str, Any]:
    """`limit` (the specification's name) or `top_k` (mem0's), 100 by default."""
    top_k = data.pop("top_k", None)
    field = "limit" if data.get("limit") else "top_k"
    limit = data.get("limit") or top_k or min(100, settings.MEMORY_MAX_PAGE_SIZE)
    if limit > maximum:
        raise serializers.ValidationError({field: [f"at most {maximum}"]})
    data["limit"] = limit
    return data


class OssScopeSerializer(serializers.Serializer):
    user_id = OptionalText(max_length=255)
    agent_id = OptionalText(max_length=255)
    run_id = OptionalText(max_length=255)


class OssAddSerializer(OssScopeSerializer):
    messages = serializers.JSONField(help_text="a string, a message, or a list of messages")
    metadata = serializers.DictField(required=False, allow_null=True)
    infer = StrictBooleanField(required=False, allow_null=True, default=True)
    prompt = OptionalText(max_length=MAX_INSTRUCTIONS, help_text="replaces the extraction prompt")
    filters = FilterExpressionField(required=False, allow_null=True)  # accepted, not used


class OssListSerializer(OssScopeSerializer):
    filters = FilterExpressionField(required=False, allow_null=True)
    limit = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    top_k = serializers.IntegerField(min_value=1, required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return _limit(attrs, MAX_LIST)


class OssSearchSerializer(OssListSerializer):
    query = StrictCharField(max_length=2000)
    threshold = StrictFloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return _limit(attrs, settings.MEMORY_MAX_PAGE_SIZE)


class OssUpdateSerializer(serializers.Serializer):
    text = StrictCharField(required=False, allow_null=True, trim_whitespace=False)
    metadata = serializers.DictField(required=False, allow_null=True)
