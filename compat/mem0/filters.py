"""mem0's filter syntax, translated to the platform's filter language
(memories/selectors/filter_language.py), which already speaks most of it: `AND`/`OR`/`NOT`,
the operators `in`, `gt`, `gte`, `lt`, `lte`, `ne`, `contains`, `icontains`, `metadata` trees
and the scope fields. What differs, and is rewritten here:

- `"*"` (any value) becomes `{"ne": null}` (the field is set); on `categories` it matches
  every memory, so the condition is dropped;
- `NOT` may hold a list (mem0), read as the AND of its items;
- `categories` are the memories' `tags`, `keywords` search the text (`icontains`), and
  `app_id` (no column here) is `metadata.app_id`, where `add` stores it.

Everything else passes through unchanged, so the platform's translator checks it and a bad
node is a 400 naming its path, e.g. `filters.AND[1].created_at.gte`.

mem0's open-source `Memory` keeps a memory's metadata beside its text, so there a filter on
any other field is on a metadata key (`translate_oss_filters`: `{"tag": "work"}` is
`metadata.tag`), in either spelling: `{"tag": {"eq": "work"}}` or the portable
`{"field": "tag", "operator": "eq", "value": "work"}`.
"""

from __future__ import annotations

import ast
from typing import Any

from platformcore.lib import json_input
from platformcore.lib.errors import InvalidInput

WILDCARD = "*"
SCOPE_FIELDS = ("user_id", "agent_id", "run_id", "app_id")
APP_ID_KEY = "metadata.app_id"
_RENAMED = {"categories": "tags", "keywords": "memory", "app_id": APP_ID_KEY}
_MAX_QUERY_FILTER = 4000  # characters of a filter sent in a query string


def _fail(path: str, message: str) -> InvalidInput:
    return InvalidInput(f"invalid filter at {path}: {message}", fields={path: [message]})


def translate_filters(filters: Any, path: str = "filters") -> dict[str, Any] | None:
    """The platform's filter expression for a mem0 filter, or None when it matches
    everything (no filter, or only wildcards on categories)."""
    if filters is None or filters == {}:
        return None
    if not isinstance(filters, dict):
        raise _fail(path, "must be an object")
    parts = [_entry(str(key), value, f"{path}.{key}") for key, value in filters.items()]
    return all_of(*parts)  # one object per key: renamed keys never overwrite each other


def _entry(key: str, value: Any, path: str) -> dict[str, Any] | None:
    logical = key.upper()
    if logical in ("AND", "OR"):
        if not isinstance(value, list) or not value:
            raise _fail(path, "must be a non-empty list of filters")
        items = [translate_filters(item, f"{path}[{i}]") for i, item in enumerate(value)]
        if logical == "OR" and any(item is None for item in items):
            return None  # one branch matches everything
        kept = [item for item in items if item is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else {logical: kept}
    if logical == "NOT":
        inner = {"AND": value} if isinstance(value, list) else value
        negated = translate_filters(inner, path)
        if negated is None:
            raise _fail(path, "negates a condition that matches every memory")
        return {"NOT": negated}
    target = _RENAMED.get(key, key)
    if value == WILDCARD:
        return None if target == "tags" else {target: {"ne": None}}
    if key == "keywords" and not isinstance(value, dict):
        return {target: {"icontains": value}}
    return {target: value}


def scope_of(body: dict[str, Any], filters: Any) -> dict[str, str]:
    """user_id / agent_id / run_id / app_id given plainly: at the top of the body, else as
    equalities at the top of `filters` or of its top-level `AND`."""
    scope = {name: body[name] for name in SCOPE_FIELDS if isinstance(body.get(name), str)}
    for part in _conjuncts(filters):
        for name in SCOPE_FIELDS:
            value = part.get(name)
            if isinstance(value, str) and value and value != WILDCARD:
                scope.setdefault(name, value)
    return {name: value for name, value in scope.items() if value}


def _conjuncts(filters: Any) -> list[dict[str, Any]]:
    if not isinstance(filters, dict):
        return []
    parts = [filters]
    for key, value in filters.items():
        if str(key).upper() == "AND" and isinstance(value, list):
            parts += [item for item in value if isinstance(item, dict)]
    return parts


def filters_from_query_string(raw: str | None) -> dict[str, Any] | None:
    """A `filters` query parameter: JSON, or the Python literal mem0's clients put there (they
    pass the dict to httpx as a parameter, which writes its `str()`)."""
    if raw is None or raw == "":
        return None
    if len(raw) > _MAX_QUERY_FILTER:
        raise _fail("filters", f"at most {_MAX_QUERY_FILTER} characters")
    try:
        value = json_input.loads(raw)
    except json_input.JsonInputError as exc:
        raise _fail("filters", str(exc)) from exc
    except ValueError:
        try:
            value = ast.literal_eval(raw)
            json_input.check_value(value)
        except json_input.JsonInputError as exc:
            raise _fail("filters", str(exc)) from exc
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise _fail("filters", "must be a JSON object") from exc
    if not isinstance(value, dict):
        raise _fail("filters", "must be a JSON object")
    return value


def all_of(*expressions: dict[str, Any] | None) -> dict[str, Any] | None:
    """The AND of the given expressions, leaving out those that match everything."""
    kept = [expression for expression in expressions if expression]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else {"AND": kept}


# fields of a memory in mem0's open-source shape; any other field is a metadata key
_OSS_FIELDS = {
    "id": "id",
    "memory": "memory",
    "data": "memory",
    "text": "memory",
    "user_id": "user_id",
    "agent_id": "agent_id",
    "run_id": "run_id",
    "created_at": "created_at",
    "updated_at": "updated_at",
    "metadata": "metadata",
    "categories": "tags",
    "tags": "tags",
    "entity": "entity",
}


def translate_oss_filters(filters: Any, path: str = "filters") -> dict[str, Any] | None:
    """The platform's filter expression for a filter of mem0's open-source `Memory` (or the
    portable `{field, operator, value}` form), None when it matches everything."""
    if filters is None or filters == {}:
        return None
    if not isinstance(filters, dict):
        raise _fail(path, "must be an object")
    if "field" in filters or "operator" in filters:
        field = filters.get("field")
        return {**filters, "field": _oss_field(field)} if isinstance(field, str) else filters
    parts = []
    for key, value in filters.items():
        logical, here = str(key).upper(), f"{path}.{key}"
        if logical in ("AND", "OR"):
            if not isinstance(value, list) or not value:
                raise _fail(here, "must be a non-empty list of filters")
            items = [translate_oss_filters(item, f"{here}[{i}]") for i, item in enumerate(value)]
            if logical == "OR" and any(item is None for item in items):
                continue  # one branch matches everything
            kept = [item for item in items if item is not None]
            parts.append({logical: kept} if len(kept) > 1 else (kept[0] if kept else None))
        elif logical == "NOT":
            negated = translate_oss_filters(
                {"AND": value} if isinstance(value, list) else value, here
            )
            if negated is None:
                raise _fail(here, "negates a condition that matches every memory")
            parts.append({"NOT": negated})
        elif value == WILDCARD:
            parts.append({_oss_field(str(key)): {"ne": None}})
        else:
            parts.append({_oss_field(str(key)): value})
    return all_of(*parts)


def _oss_field(name: str) -> str:
    if name in _OSS_FIELDS:
        return _OSS_FIELDS[name]
    return name if name.startswith("metadata.") else f"metadata.{name}"
