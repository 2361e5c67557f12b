"""One row as a JSON object and back: encoding for export, checking and decoding for import.

Values travel as JSON holds them (times in ISO 8601, UUIDs as text), except vectors: a vector
is the base64 text of its 32-bit floats, little-endian (2 kB for 384 dimensions instead of
~7.5 kB of decimal numbers, exact, and a tenth of the time to write and read). A list of
numbers is accepted too, for files written by hand or by another tool."""

from __future__ import annotations

import base64
import datetime as dt
import uuid
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError
from django.db import models

from portability.sections import Section


def encode(value: Any) -> Any:
    """A column's value as JSON can hold it (bytes as base64 text, which Django's
    BinaryField reads back)."""
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def encode_vector(value: Any) -> str | None:
    if value is None:
        return None
    return base64.b64encode(np.asarray(value, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(value: Any, dimensions: int) -> list[float]:
    """A vector from its base64 text or a list of numbers; ValueError when it is neither or
    has not `dimensions` values."""
    if isinstance(value, str):
        raw = base64.b64decode(value, validate=True)
        if len(raw) != dimensions * 4:
            raise ValueError
        return np.frombuffer(raw, dtype="<f4").astype(float).tolist()  # type: ignore[no-any-return]
    if not isinstance(value, list) or len(value) != dimensions:
        raise ValueError
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
        raise ValueError
    return value


def dump(section: Section, values: dict[str, Any], *, embeddings: bool) -> dict[str, Any]:
    vectors = section.vector_fields
    return {
        name: encode_vector(value) if name in vectors else encode(value)
        for name, value in values.items()
        if embeddings or name not in vectors
    }


def exported_columns(section: Section, *, embeddings: bool) -> list[str]:
    skip = () if embeddings else section.vector_fields
    return [field.attname for field in section.fields if field.attname not in skip]


class RowError(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def key_of(field: models.Field, value: Any) -> Any:
    """An id as the import compares it (UUIDs as text, integers as ints)."""
    target = field.target_field if field.is_relation else field
    return str(value) if isinstance(target, models.UUIDField) else value


def load(section: Section, data: Any, *, dimensions: int) -> dict[str, Any]:
    """The row's Python values by attname, checked against the model's fields: an unknown
    field, a missing required one, a value its field refuses or a vector of the wrong size
    raise `RowError` naming the field. Missing fields with a default take it (an export from
    before a column existed); missing vectors stay unset (computed after the import)."""
    if not isinstance(data, dict):
        raise RowError("data", "a JSON object expected")
    if section.normalize is not None:
        data = section.normalize(data)
    known = {field.attname: field for field in section.fields}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise RowError(unknown[0], f"unknown field of {section.name}")
    values: dict[str, Any] = {}
    for attname, field in known.items():
        if attname not in data:
            if attname == section.pk.attname:
                raise RowError(attname, "required (the row's id)")
            if attname in section.vector_fields:
                continue
            if field.has_default() or field.db_default is not models.NOT_PROVIDED:
                continue
            if field.null:
                values[attname] = None
                continue
            raise RowError(attname, "required")
        values[attname] = _clean(section, field, data[attname], dimensions)
    return values


def _clean(section: Section, field: models.Field, value: Any, dimensions: int) -> Any:
    if value is None:
        if not field.null:
            raise RowError(field.attname, "may not be null")
        return None
    if field.attname in section.vector_fields:
        try:
            return decode_vector(value, dimensions)
        except (ValueError, TypeError) as exc:
            message = f"{dimensions} float32 values in base64, or a list of {dimensions} numbers"
            raise RowError(field.attname, message) from exc
    target = field.target_field if field.is_relation else field
    try:
        whole = isinstance(target, models.AutoField | models.BigAutoField | models.IntegerField)
        if whole and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValidationError("a whole number expected")
        if field.is_relation or isinstance(field, models.AutoField | models.BigAutoField):
            return target.to_python(value)
        return field.clean(value, None)
    except ValidationError as exc:
        raise RowError(field.attname, "; ".join(exc.messages)) from exc
