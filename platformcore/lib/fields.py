"""Strict DRF fields: JSON types are checked, not coerced (123 is not a string)."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from typing import Any

from rest_framework import serializers

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(value: Any) -> bool:
    """Whether every string (and key) of a JSON value can go to PostgreSQL as text: no NUL
    character and no unpaired surrogate, which text and jsonb refuse (a database error, so a
    500, where the client deserves a 400 naming the field)."""
    if isinstance(value, str):
        return not _UNSTORABLE.search(value)
    if isinstance(value, dict):
        return all(storable_text(k) and storable_text(v) for k, v in value.items())
    if isinstance(value, list):
        return all(storable_text(item) for item in value)
    return True


# A list's `offset` is a PostgreSQL bigint (OFFSET): a larger one is a 400, not a database error.
MAX_PAGE_OFFSET = 2**63 - 1


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


class FieldsBuiltOnce:
    """For serializers that only validate request input (query parameters, search bodies):
    their bound fields are built once per class and shared by every instance.

    DRF deep-copies every declared field for each serializer instance, because a field is
    bound to its serializer: for the search request's 25 fields, a millisecond on every search.
    Validation keeps its state in the instance (`initial_data`, `validated_data`, errors)
    and in locals, never on a field, so input serializers can share one set, bound to a
    template instance without data. Not for serializers whose fields read `context` or the
    serializer's `instance`/`partial` (defaults such as CurrentUserDefault, output fields).
    A mutable default (`default=["active"]`) is handed out as a copy, as DRF's per-instance
    copies did, so a view that changes its validated data cannot change the next request's."""

    @property
    def fields(self) -> Any:
        cls = type(self)
        shared = cls.__dict__.get("_shared_fields")
        if shared is None:
            template = cls()  # type: ignore[call-arg]
            build = serializers.Serializer.__dict__["fields"].real_func
            shared = build(template)  # DRF's own binding, on the template
            for field in shared.values():
                if isinstance(field.default, list | dict | set):
                    field.get_default = functools.partial(_copied, field.get_default)
            cls._shared_fields = shared  # type: ignore[attr-defined]
        return shared


def _copied(get_default: Callable[[], Any]) -> Any:
    return copy.deepcopy(get_default())
