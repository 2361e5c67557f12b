"""JSON from outside (request bodies, query parameters, MCP messages, websocket frames), parsed
one way: refused with a message before anything walks it when it nests deeper than
`MAX_DEPTH`, holds a NUL character (PostgreSQL stores none, in text or jsonb), or a number no
column can hold (NaN, Infinity, a float that overflows to infinity, an integer outside 64 bits).

The depth is measured on the text before parsing, in linear time at C speed: strings are cut
out, then innermost `[]`/`{}` pairs are removed once per level, so a body of a million
brackets costs as much as one of a few, and nothing recursive ever sees a deep document.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 32  # the filter language allows 12 levels; metadata needs a handful
_INT64 = 2**63 - 1
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000", re.I)


class JsonInputError(ValueError):
    """Input refused before it was used: the message says why (400 to the caller)."""


def too_deep(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON `text` nests arrays/objects more than `limit` deep."""
    raw = text.encode() if isinstance(text, str) else text
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", raw))
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"").replace(b"{}", b"")
    return bool(brackets)


def _refuse_constant(name: str) -> Any:
    raise JsonInputError(f"{name} is not a number JSON input may use")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonInputError(f"the number {text[:40]} is out of range")
    return value


def _int64(text: str) -> int:
    value = int(text)
    if not -_INT64 - 1 <= value <= _INT64:
        raise JsonInputError(f"the integer {text[:40]} is out of range (64 bits)")
    return value


def check_text(text: str | bytes, limit: int = MAX_DEPTH, *, nul: bool = True) -> None:
    """Refuse JSON text nested past `limit` or (`nul`) holding an escaped NUL character."""
    raw = text.encode() if isinstance(text, str) else text
    if too_deep(raw, limit):
        raise JsonInputError(f"JSON nested more than {limit} levels deep")
    if nul and has_nul(raw):
        raise JsonInputError("text may not contain the NUL character (\\u0000)")


def has_nul(text: str | bytes) -> bool:
    raw = text.encode() if isinstance(text, str) else text
    return b"\x00" in raw or bool(_NUL_ESCAPE.search(raw))


def nul_path(value: Any) -> str | None:
    """Where the first NUL character of a parsed value is (`messages[0].content`), or None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                name = f"{path}.{key}" if path else str(key)
                if "\x00" in str(key):
                    return name
                stack.append((child, name))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return None


def loads(text: str | bytes, limit: int = MAX_DEPTH, *, nul: bool = True) -> Any:
    """json.loads for input from outside, with the checks of the module docstring (`nul`
    False: the caller names the field holding a NUL itself, with `nul_path`)."""
    check_text(text, limit, nul=nul)
    try:
        return json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_int64
        )
    except RecursionError as exc:  # cannot happen past the depth check; never a 500
        raise JsonInputError(f"JSON nested more than {limit} levels deep") from exc


def check_value(value: Any, limit: int = MAX_DEPTH) -> None:
    """The same rules for a value another parser already built (MCP tool arguments, a form
    field), walked without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                raise JsonInputError(f"JSON nested more than {limit} levels deep")
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                if isinstance(key, str) and "\x00" in key:
                    raise JsonInputError("text may not contain the NUL character (\\u0000)")
                stack.append((child, depth + 1))
        elif isinstance(item, str) and "\x00" in item:
            raise JsonInputError("text may not contain the NUL character (\\u0000)")
        elif isinstance(item, float) and not math.isfinite(item):
            raise JsonInputError("a number is out of range")
        elif isinstance(item, int) and not -_INT64 - 1 <= item <= _INT64:
            raise JsonInputError("an integer is out of range (64 bits)")
