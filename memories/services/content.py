"""Content normalisation, hashing and field validation shared by every write."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memories.models import MemoryType
from memoryplatform.lib.errors import InvalidInput, check_choice

_WHITESPACE = re.compile(r"\s+")
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
SCOPE_RULE = "At least one of user_id, agent_id, or run_id must be provided"


def clean_content(content: Any) -> str:
    if not isinstance(content, str):
        raise InvalidInput("content must be a string", fields={"content": ["must be a string"]})
    content = content.strip()
    if not content:
        raise InvalidInput("content must not be empty", fields={"content": ["must not be empty"]})
    limit = settings.MEMORY_MAX_CONTENT_LENGTH
    if len(content) > limit:
        raise InvalidInput(
            f"content is longer than {limit} characters",
            fields={"content": [f"at most {limit} characters, got {len(content)}"]},
        )
    return content


def content_hash(content: str) -> str:
    """sha256 of the content with case and white space folded: what counts as 'the same'."""
    normalised = _WHITESPACE.sub(" ", content).strip().casefold()
    return hashlib.sha256(normalised.encode()).hexdigest()


@dataclass(frozen=True)
class Scope:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @classmethod
    def of(cls, values: Any, *, required: bool = True) -> Scope:
        get = values.get if isinstance(values, dict) else lambda name: getattr(values, name, None)
        scope = cls(**{name: (get(name) or None) for name in SCOPE_FIELDS})
        if required and scope.is_empty:
            raise InvalidInput(SCOPE_RULE, fields={name: [SCOPE_RULE] for name in SCOPE_FIELDS})
        return scope

    @property
    def is_empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.run_id)

    def as_filter(self) -> dict[str, str]:
        """Every given field must match; absent fields are not constrained."""
        return {name: value for name in SCOPE_FIELDS if (value := getattr(self, name))}

    def as_dict(self) -> dict[str, str | None]:
        return {name: getattr(self, name) for name in SCOPE_FIELDS}


def check_unit_interval(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{name} must be a number", fields={name: ["must be a number"]})
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(
            f"{name} must be within [0, 1]", fields={name: ["must be within [0, 1]"]}
        )
    return float(value)


def check_memory_type(value: Any) -> str:
    return check_choice("memory_type", value, MemoryType.values)


def check_tags(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise InvalidInput("tags must be a list of strings", fields={"tags": ["list of strings"]})
    tags = [tag.strip() for tag in value if tag.strip()]
    if any(len(tag) > 100 for tag in tags):
        raise InvalidInput("a tag is longer than 100 characters", fields={"tags": ["too long"]})
    return list(dict.fromkeys(tags))  # drop repeats, keep order


def check_metadata(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput("metadata must be an object", fields={"metadata": ["must be an object"]})
    return value
