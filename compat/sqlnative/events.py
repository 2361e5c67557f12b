"""`GET /api/events`: the project's live events as the SQL-native server names them (the
composition root serves them with the platform's SSE stream, memoryplatform/urls.py).

| its event | payload | from the platform's |
| --- | --- | --- |
| `memory_created` | `{id, content, type}` | `memory_created` |
| `memory_updated` | `{id, changes}` | `memory_updated`; `memories_merged` (the survivor) |
| `memory_deleted` | `{id}` | `memory_deleted` (deletes, merges, expiry); `memories_pruned` |
| `entity_created` | `{id, name, type}` | `entity_created` |
| `consolidation_complete` | `{merged, deleted}` | `consolidation_complete` |
| `sync_complete` | `{timestamp}` | (the stream is in sync, below) |

`sync_complete` follows the replay of what a reconnecting client (`Last-Event-ID`) missed,
at once for a new client. Other events of the platform are not sent. Each frame keeps the
platform's event `id`, so a reconnecting client resumes where it left off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from platformcore.events import Event, sse_frame


def _created(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "memory_created",
            {"id": data["id"], "content": data.get("content"), "type": data.get("memory_type")},
        )
    ]


def _updated(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("memory_updated", {"id": data["id"], "changes": data.get("changes", [])})]


def _merged(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("memory_updated", {"id": data["id"], "changes": ["merged"]})]


def _deleted(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("memory_deleted", {"id": data["id"]})]


def _pruned(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("memory_deleted", {"id": memory_id}) for memory_id in data.get("ids", [])]


def _entity(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "entity_created",
            {"id": data["id"], "name": data.get("name"), "type": data.get("entity_type")},
        )
    ]


def _consolidated(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    merged = data.get("memories_merged", 0)
    return [("consolidation_complete", {"merged": merged, "deleted": merged})]


TRANSLATIONS: dict[str, Callable[[dict[str, Any]], list[tuple[str, dict[str, Any]]]]] = {
    "memory_created": _created,
    "memory_updated": _updated,
    "memories_merged": _merged,
    "memory_deleted": _deleted,
    "memories_pruned": _pruned,
    "entity_created": _entity,
    "consolidation_complete": _consolidated,
}


def render(event: Event) -> Iterable[str]:
    translate = TRANSLATIONS.get(event["type"])
    if translate is None:
        return []
    return [sse_frame(name, payload, event.get("id")) for name, payload in translate(event["data"])]


def in_sync() -> str:
    """`sync_complete`: the stream has caught up."""
    return sse_frame("sync_complete", {"timestamp": datetime.now(UTC).isoformat()})
