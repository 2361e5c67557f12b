"""Strict DRF fields: JSON types are checked, not coerced (123 is not a string)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float | str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, int | float) and not isinstance(data, bool):
            self.fail("invalid", input=data)
        return super().to_internal_value(data)


class CommaListField(serializers.ListField):
    """A query-string list: `?tag=a&tag=b` or `?tags=a,b`."""

    def get_value(self, dictionary: Any) -> Any:
        if hasattr(dictionary, "getlist"):
            raw = dictionary.getlist(self.field_name)
            if not raw:
                return serializers.empty
            return [item.strip() for value in raw for item in value.split(",") if item.strip()]
        return super().get_value(dictionary)
