"""How memories, add events, history entries and scopes look to mem0's clients: mem0's field
names (`memory` for the text, `hash`, `categories` for tags, `old_memory`/`new_memory`) over
the platform's rows."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from rest_framework import serializers

from memories.models import Memory, MemoryHistory

_DATETIME = serializers.DateTimeField()  # DRF's ISO 8601, as the platform's own API writes it


def iso_time(value: datetime | None) -> str | None:
    return None if value is None else _DATETIME.to_representation(value)


def mem0_hash(text: str) -> str:
    """mem0's `hash`: md5 of the memory's text as stored (the platform's own duplicate key,
    `content_hash`, is a sha256 of the text with case and white space folded)."""
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def memory_body(memory: Memory, *, score: float | None = None) -> dict[str, Any]:
    metadata = memory.metadata if isinstance(memory.metadata, dict) else {}
    body: dict[str, Any] = {
        "id": str(memory.pk),
        "memory": memory.content,
        "hash": mem0_hash(memory.content),
        "metadata": metadata,
        "categories": [str(tag) for tag in memory.tags],
        "user_id": memory.user_id,
        "agent_id": memory.agent_id,
        "app_id": metadata.get("app_id"),
        "run_id": memory.run_id,
        "immutable": False,
        "expiration_date": memory.expires_at.date().isoformat() if memory.expires_at else None,
        # mem0 dates a memory added with a `timestamp` by it (occurred_at here)
        "created_at": iso_time(memory.occurred_at or memory.created_at),
        "updated_at": iso_time(memory.updated_at),
    }
    if score is not None:
        body["score"] = round(score, 6)
    return body


def add_event_body(event: dict[str, Any]) -> dict[str, Any]:
    """One event of the platform's `add` (id, event, memory, old_memory, new_memory) as
    mem0 reports it: the text also under `data.memory`, an update's old text as
    `previous_memory`."""
    body = {
        "id": event.get("id"),
        "event": event["event"],
        "memory": event.get("memory"),
        "data": {"memory": event.get("memory")},
    }
    if event.get("old_memory") is not None:
        body["previous_memory"] = event["old_memory"]
    return body


def history_body(entry: MemoryHistory) -> dict[str, Any]:
    """mem0's history item (old_memory / new_memory), with the platform's event names
    (ADD, UPDATE, DELETE, and MERGE and RESTORE, which mem0 does not have) and the same
    texts as `old_value` / `new_value`."""
    new_values = entry.new_values if isinstance(entry.new_values, dict) else {}
    return {
        "id": str(entry.pk),
        "memory_id": str(entry.memory_id),
        "event": entry.event,
        "old_memory": entry.old_content,
        "new_memory": entry.new_content,
        "old_value": entry.old_content,
        "new_value": entry.new_content,
        "input": [],
        "metadata": new_values.get("metadata"),
        "user_id": entry.user_id,
        "agent_id": entry.agent_id,
        "run_id": entry.run_id,
        "actor": entry.actor,
        "is_deleted": entry.event == "DELETE",
        "timestamp": iso_time(entry.created_at),
        "created_at": iso_time(entry.created_at),
        "updated_at": iso_time(entry.created_at),
    }


def scope_body(row: dict[str, Any]) -> dict[str, Any]:
    """A user, agent, run or app that has memories (compat.mem0.selectors.memory_scopes)."""
    return {
        "id": row["name"],
        "name": row["name"],
        "type": row["type"],
        "total_memories": row["total_memories"],
        "created_at": iso_time(row["created_at"]),
        "updated_at": iso_time(row["updated_at"]),
        "metadata": None,
        "owner": None,
        "organization": None,
    }
