"""The mem0-style filter expression language, translated to one Django `Q` (so, to SQL).

Two spellings of a condition are accepted and can be mixed:

- the portable form: ``{"field": "metadata.price", "operator": "gt", "value": 10}``;
- the short form: ``{"user_id": "alice"}`` (eq), ``{"tags": {"in": ["work", "home"]}}``,
  ``{"metadata.price": {"gt": 10}}`` or nested ``{"metadata": {"price": {"gt": 10}}}``.
  Several keys in one object are ANDed.

Conditions compose with ``{"AND": [...]}``, ``{"OR": [...]}`` and ``{"NOT": {...}}``.
Operators: eq, ne, gt, gte, lt, lte, in, nin, contains, icontains. Fields: the memory's
columns (``memory`` is mem0's name for ``content``, ``tag`` for ``tags``) and
``metadata.<key>[.<key>...]``; ``entity`` (a knowledge-graph entity's name or alias) and
``entity_id`` match memories linked to that entity (eq, ne, in = any of, nin = none of).
A bad node is a 400 naming its path, such as
``filters.AND[1].metadata.price.gt``. ``ne``/``nin`` match rows where the field is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Any
from uuid import UUID

from django.db.models import JSONField, Q, Value
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.lookups import Contains, IContains
from django.utils.dateparse import parse_date, parse_datetime

from memories.selectors.filters import MAX_ENTITY_ID as MAX_ID
from memories.selectors.filters import linked_to_entity_ids, linked_to_entity_names
from platformcore.lib.errors import InvalidInput
from platformcore.lib.fields import storable_text
from tenants.models import Project

OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains")
LOGICAL = ("AND", "OR", "NOT")
MAX_DEPTH = 12
MAX_CONDITIONS = 100
MAX_LIST_VALUES = 1000  # values of one in/nin list

_ORDERED = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin")
_ALLOWED = {
    "text": OPERATORS,
    "number": _ORDERED,
    "datetime": _ORDERED,
    "bool": ("eq", "ne"),
    "uuid": ("eq", "ne", "in", "nin"),
    "array": ("eq", "ne", "in", "nin", "contains"),
    "json": OPERATORS,
    "entity": ("eq", "ne", "in", "nin"),
    "entity_id": ("eq", "ne", "in", "nin"),
}
_FIELDS: dict[str, tuple[str, str]] = {
    "id": ("pk", "uuid"),
    "content": ("content", "text"),
    "memory": ("content", "text"),
    "context": ("context", "text"),
    "memory_type": ("memory_type", "text"),
    "source": ("source", "text"),
    "user_id": ("user_id", "text"),
    "agent_id": ("agent_id", "text"),
    "run_id": ("run_id", "text"),
    "state": ("state", "text"),
    "layer": ("layer", "text"),
    "tags": ("tags", "array"),
    "tag": ("tags", "array"),
    "confidence": ("confidence", "number"),
    "importance": ("importance", "number"),
    "decay_score": ("decay_score", "number"),
    "access_count": ("access_count", "number"),
    "version": ("version", "number"),
    "token_count": ("token_count", "number"),
    "pinned": ("pinned", "bool"),
    "created_at": ("created_at", "datetime"),
    "updated_at": ("updated_at", "datetime"),
    "last_accessed_at": ("last_accessed_at", "datetime"),
    "expires_at": ("expires_at", "datetime"),
    # not columns: a subquery on the memory's entity links (filters.linked_to_entity_*)
    "entity": ("entity", "entity"),
    "entity_id": ("entity_id", "entity_id"),
}
_METADATA_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def filter_expression_q(
    expression: Any, *, path: str = "filters", project: Project | None = None
) -> Q:
    """Translate a filter expression into a Q, or raise InvalidInput naming the bad node.
    `project` (the memories' project) lets `entity` names resolve to its entity ids first."""
    return _Translator(project).node(expression, path, depth=0)


@dataclass(frozen=True)
class _Field:
    lookup: str  # Django lookup path of a column, e.g. "confidence"
    kind: str
    keys: tuple[str, ...] = ()  # a metadata path, e.g. ("price",) for metadata.price


def _fail(path: str, message: str) -> InvalidInput:
    return InvalidInput(f"invalid filter at {path}: {message}", fields={path: [message]})


class _Translator:
    def __init__(self, project: Project | None = None) -> None:
        self.conditions = 0
        self.project = project

    def node(self, node: Any, path: str, *, depth: int) -> Q:
        if depth > MAX_DEPTH:
            raise _fail(path, f"nested deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict) or not node:
            raise _fail(path, "must be a non-empty object")
        if "field" in node or "operator" in node:
            return self.portable(node, path)
        q = Q()
        for key, value in node.items():
            q &= self.entry(str(key), value, f"{path}.{key}", depth=depth)
        return q

    def entry(self, key: str, value: Any, path: str, *, depth: int) -> Q:
        logical = key.upper()
        if logical in ("AND", "OR"):
            if not isinstance(value, list) or not value:
                raise _fail(path, "must be a non-empty list of expressions")
            parts = [
                self.node(item, f"{path}[{i}]", depth=depth + 1) for i, item in enumerate(value)
            ]
            combined = parts[0]
            for part in parts[1:]:
                combined = combined & part if logical == "AND" else combined | part
            return combined
        if logical == "NOT":
            return ~self.node(value, path, depth=depth + 1)
        nested = isinstance(value, dict) and not _is_operator_map(value)
        if nested and (key == "metadata" or key.startswith("metadata.")):
            return self.metadata_tree(value, path, key.split("."), depth=depth)
        field = _field(key, path)
        if _is_operator_map(value):
            q = Q()
            for operator, operand in value.items():
                q &= self.condition(field, operator, operand, f"{path}.{operator}")
            return q
        return self.condition(field, "eq", value, path)

    def metadata_tree(self, tree: dict[str, Any], path: str, keys: list[str], *, depth: int) -> Q:
        """`{"metadata": {"a": {"b": {"gt": 1}}}}`: descend until an operator map or a value."""
        if depth > MAX_DEPTH:
            raise _fail(path, f"nested deeper than {MAX_DEPTH} levels")
        if not tree:
            raise _fail(path, "must be a non-empty object")
        q = Q()
        for key, value in tree.items():
            sub_path, sub_keys = f"{path}.{key}", [*keys, str(key)]
            if isinstance(value, dict) and value and not _is_operator_map(value):
                q &= self.metadata_tree(value, sub_path, sub_keys, depth=depth + 1)
                continue
            field = _field(".".join(sub_keys), sub_path)
            if _is_operator_map(value):
                for operator, operand in value.items():
                    q &= self.condition(field, operator, operand, f"{sub_path}.{operator}")
            else:
                q &= self.condition(field, "eq", value, sub_path)
        return q

    def portable(self, node: dict[str, Any], path: str) -> Q:
        unknown = sorted(set(node) - {"field", "operator", "value"})
        if unknown:
            raise _fail(f"{path}.{unknown[0]}", "unknown key; expected field, operator, value")
        if not isinstance(node.get("field"), str):
            raise _fail(f"{path}.field", "must be a field name")
        if "value" not in node:
            raise _fail(f"{path}.value", "is required")
        field = _field(node["field"], f"{path}.field")
        operator = node.get("operator", "eq")
        return self.condition(
            field, operator, node["value"], path, operator_path=f"{path}.operator"
        )

    def condition(
        self, field: _Field, operator: Any, value: Any, path: str, *, operator_path: str = ""
    ) -> Q:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise _fail(path, f"more than {MAX_CONDITIONS} conditions")
        if operator not in OPERATORS:
            raise _fail(operator_path or path, f"unknown operator; one of {', '.join(OPERATORS)}")
        if operator not in _ALLOWED[field.kind]:
            allowed = ", ".join(_ALLOWED[field.kind])
            raise _fail(operator_path or path, f"{operator} does not apply here; use {allowed}")
        value_path = f"{path}.value" if operator_path else path
        value = _value(field.kind, operator, value, value_path)
        if not storable_text(value):  # PostgreSQL refuses them: a 400, not a database error
            raise _fail(value_path, "no NUL characters (\\u0000) or unpaired surrogates")
        if field.kind in ("entity", "entity_id"):
            return _entity(field.kind, operator, value, self.project)
        return _build(field, operator, value)


MAX_NUMBER = 2**31 - 1


def _is_operator_map(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(key in OPERATORS for key in value)


def _field(name: str, path: str) -> _Field:
    if name in _FIELDS:
        lookup, kind = _FIELDS[name]
        return _Field(lookup, kind)
    if name.startswith("metadata."):
        keys = name.split(".")[1:]
        if keys and all(_METADATA_KEY.match(key) and "__" not in key for key in keys):
            return _Field("metadata", "json", tuple(keys))
        raise _fail(path, "metadata keys are letters, digits, '_' and '-', starting with a letter")
    known = ", ".join(sorted(_FIELDS))
    raise _fail(path, f"unknown field; one of {known} or metadata.<key>")


def _value(kind: str, operator: str, value: Any, path: str) -> Any:
    if operator in ("in", "nin"):
        if not isinstance(value, list) or not value:
            raise _fail(path, f"{operator} needs a non-empty list")
        if len(value) > MAX_LIST_VALUES:
            raise _fail(path, f"{operator} takes at most {MAX_LIST_VALUES} values")
        return [_scalar(kind, item, f"{path}[{i}]") for i, item in enumerate(value)]
    if operator in ("contains", "icontains") and kind != "array":
        if not isinstance(value, str):
            raise _fail(path, f"{operator} needs a string")
        return value
    if kind == "array" and isinstance(value, list):
        return [_scalar(kind, item, f"{path}[{i}]") for i, item in enumerate(value)]
    ordered = operator in ("gt", "gte", "lt", "lte") and kind == "json"
    if ordered and (isinstance(value, bool) or not isinstance(value, int | float | str)):
        raise _fail(path, f"{operator} needs a number or a string")
    return _scalar(kind, value, path)


def _scalar(kind: str, value: Any, path: str) -> Any:
    match kind:
        case "text" | "array":
            if not isinstance(value, str):
                raise _fail(path, "must be a string")
            return value
        case "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _fail(path, "must be a number")
            if not -MAX_NUMBER <= value <= MAX_NUMBER:  # the integer columns' range (int4)
                raise _fail(path, f"must be between -{MAX_NUMBER} and {MAX_NUMBER}")
            return value
        case "bool":
            if not isinstance(value, bool):
                raise _fail(path, "must be true or false")
            return value
        case "datetime":
            return _datetime(value, path)
        case "entity":
            if not isinstance(value, str) or not value.strip():
                raise _fail(path, "must be an entity name or alias")
            return value
        case "entity_id":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ID:
                raise _fail(path, "must be an entity id (a positive integer)")
            return value
        case "uuid":
            try:
                return UUID(str(value))
            except ValueError as exc:
                raise _fail(path, "must be a UUID") from exc
        case _:  # json: any JSON scalar
            if isinstance(value, dict | list):
                raise _fail(path, "must be a string, number, boolean or null")
            return value


def _datetime(value: Any, path: str) -> datetime:
    if isinstance(value, str):
        try:  # well-formed but impossible ("2024-02-30") raises ValueError
            parsed = parse_datetime(value)
            if parsed is None and (day := parse_date(value)) is not None:
                parsed = datetime.combine(day, time.min)
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise _fail(path, "must be an ISO 8601 date or date-time")


def _build(field: _Field, operator: str, value: Any) -> Q:
    name = field.lookup
    if field.kind == "array":
        return _array(name, operator, value)
    if field.kind == "json":
        return _json(field.keys, operator, value)
    match operator:
        case "eq":
            return Q(**{name: value}) if value is not None else Q(**{f"{name}__isnull": True})
        case "ne":
            return ~Q(**{name: value}) if value is not None else Q(**{f"{name}__isnull": False})
        case "in":
            return Q(**{f"{name}__in": value})
        case "nin":
            return ~Q(**{f"{name}__in": value})
        case _:
            return Q(**{f"{name}__{operator}": value})


def _json(keys: tuple[str, ...], operator: str, value: Any) -> Q:
    """A condition on `metadata.<keys>`, the path built as key transforms and the operator
    taken from the path's own lookups, never from a lookup string: a key named like a lookup
    (`regex`, `isnull`, `has_key`) is only ever a key. Operands are compared as JSON."""
    path: Any = "metadata"
    for key in keys:
        path = KeyTransform(key, path)

    def lookup(name: str, operand: Any) -> Q:
        return Q(path.get_lookup(name)(path, operand))

    def as_json(operand: Any) -> Value:
        return Value(operand, output_field=JSONField())

    missing = lookup("isnull", True)
    match operator:
        case "eq":
            return missing if value is None else lookup("exact", as_json(value))
        case "ne":
            if value is None:
                return lookup("isnull", False)
            return ~lookup("exact", as_json(value)) | missing  # a missing key is "not equal"
        case "in":
            return lookup("in", [as_json(item) for item in value])
        case "nin":
            return ~lookup("in", [as_json(item) for item in value]) | missing
        case "contains" | "icontains":  # a substring of the value as text, not containment
            text = KeyTextTransform(keys[-1], path.lhs if len(keys) > 1 else "metadata")
            return Q((Contains if operator == "contains" else IContains)(text, value))
        case _:
            return lookup(operator, as_json(value))


def _entity(kind: str, operator: str, value: Any, project: Project | None) -> Q:
    values = value if isinstance(value, list) else [value]
    if kind == "entity":
        linked = linked_to_entity_names(values, project=project)
    else:
        linked = linked_to_entity_ids(values)
    return linked if operator in ("eq", "in") else ~linked


def _array(name: str, operator: str, value: Any) -> Q:
    values = value if isinstance(value, list) else [value]
    match operator:
        case "eq" | "contains":
            return Q(**{f"{name}__contains": values})
        case "ne":
            return ~Q(**{f"{name}__contains": values})
        case "in":
            return Q(**{f"{name}__overlap": values})
        case _:  # nin
            return ~Q(**{f"{name}__overlap": values})
