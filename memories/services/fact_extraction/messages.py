"""Input of `add`: a string or chat messages, parsed to one conversation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from platformcore.lib.errors import InvalidInput
from platformcore.lib.fields import storable_text

ROLES = ("system", "user", "assistant")
MAX_MESSAGES = 200
_UNSTORABLE = "NUL characters (\\u0000) or unpaired surrogates"  # PostgreSQL text refuses them


@dataclass(frozen=True)
class Message:
    role: str
    content: str


def _bad(message: str) -> InvalidInput:
    return InvalidInput(message, fields={"messages": [message]})


def parse_messages(value: Any) -> list[Message]:
    """A string becomes one user message; a list must hold {role, content} objects."""
    if isinstance(value, str):
        if not value.strip():
            raise _bad("messages must not be empty")
        if not storable_text(value):
            raise _bad(f"messages must not contain {_UNSTORABLE}")
        return [Message("user", value)]
    if not isinstance(value, list) or not value:
        raise _bad("messages must be a non-empty string or list of {role, content}")
    if len(value) > MAX_MESSAGES:
        raise _bad(f"at most {MAX_MESSAGES} messages per call")
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise _bad(f"messages[{index}] must be an object with role and content")
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            raise _bad(f"messages[{index}].role must be one of {', '.join(ROLES)}")
        if not isinstance(content, str):
            raise _bad(f"messages[{index}].content must be a string")
        if not storable_text(content):
            raise _bad(f"messages[{index}].content must not contain {_UNSTORABLE}")
        messages.append(Message(role, content))
    return messages


def conversation_text(messages: list[Message]) -> str:
    """`role: content` lines, the form the extraction prompt expects."""
    return "\n".join(f"{m.role}: {m.content}" for m in messages if m.content.strip())
