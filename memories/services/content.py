"""Content normalisation, hashing and field validation shared by every write."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memories.models import MemoryType
from memoryplatform.lib.errors import InvalidInput, check_choice
from memoryplatform.lib.fields import storable_text

_WHITESPACE = re.compile(r"\s+")
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
SCOPE_RULE = "At least one of user_id, agent_id, or run_id must be provided"


def clean_content(content: Any) -> str:
    stripped = content.strip() if isinstance(content, str) else content
    content = capped_text("content", stripped, settings.MEMORY_MAX_CONTENT_LENGTH)
    if not content:
        raise InvalidInput("content must not be empty", fields={"content": ["must not be empty"]})
    return content


def clean_context(context: Any) -> str:
    """A memory's context, capped like its content: no free-text field lets a request make
    the platform mask or index megabytes."""
    return capped_text("context", context, settings.MEMORY_MAX_CONTEXT_LENGTH)


def capped_text(field: str, value: Any, limit: int) -> str:
    """`value` if it is a string of at most `limit` characters; else InvalidInput naming
    `field`."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", fields={field: ["must be a string"]})
    if len(value) > limit:
        raise InvalidInput(
            f"{field} is longer than {limit} characters",
            fields={field: [f"at most {limit} characters, got {len(value)}"]},
        )
    if not storable_text(value):
        message = "no NUL characters (\\u0000) or unpaired surrogates"
        raise InvalidInput(f"{field}: {message}", fields={field: [message]})
    return value


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
    if len(value) > MAX_TAGS:
        message = f"at most {MAX_TAGS} tags, got {len(value)}"
        raise InvalidInput(message, fields={"tags": [message]})
    tags = [tag.strip() for tag in value if tag.strip()]
    if any(len(tag) > 100 for tag in tags):
        raise InvalidInput("a tag is longer than 100 characters", fields={"tags": ["too long"]})
    return list(dict.fromkeys(tags))  # drop repeats, keep order


MAX_TAGS = 100
MAX_METADATA_BYTES = 16 * 1024  # as JSON: metadata is for labels and numbers, not documents


def check_metadata(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput("metadata must be an object", fields={"metadata": ["must be an object"]})
    if not storable_text(value):  # PostgreSQL's jsonb refuses them
        message = "no NUL characters (\\u0000) or unpaired surrogates in keys or strings"
        raise InvalidInput(f"metadata: {message}", fields={"metadata": [message]})
    size = len(json.dumps(value, default=str).encode())
    if size > MAX_METADATA_BYTES:
        message = f"at most {MAX_METADATA_BYTES} bytes as JSON, got {size}"
        raise InvalidInput(f"metadata is too large: {message}", fields={"metadata": [message]})
    return value
