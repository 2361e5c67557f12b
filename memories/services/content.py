"""Content normalisation, hashing and field validation shared by every write."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from django.conf import settings

from memories.models import MemoryType
from platformcore.lib.errors import InvalidInput, check_choice
from platformcore.lib.fields import storable_text

_WHITESPACE = re.compile(r"\s+")


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
