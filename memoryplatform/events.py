"""Live events: sent to the project's channel-layer group after the transaction commits.

Services call `emit(...)`; websocket consumers (and anything else listening on the group)
receive `{"type": "memory.event", "event": <Event>}`. Nothing is sent for a rolled-back write.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

EventType = Literal[
    "memory_created",
    "memory_updated",
    "memory_deleted",
    "memory_restored",
    "memories_merged",
    "entity_created",
    "relation_created",
    "consolidation_complete",
    "contradiction_detected",
    "decay_complete",
    "memories_pruned",
]


class Event(TypedDict):
    type: EventType
    project: str
    at: str
    data: dict[str, Any]


def project_group(project_id: int) -> str:
    return f"project-{project_id}"


def emit(*, project_id: int, project_slug: str, type: EventType, data: dict[str, Any]) -> None:
    emit_many(project_id=project_id, project_slug=project_slug, events=[(type, data)])


def emit_many(
    *, project_id: int, project_slug: str, events: list[tuple[EventType, dict[str, Any]]]
) -> None:
    """Several events of one project, sent in order after the commit with one hop to the
    channel layer's event loop (~0.5 ms each when sent one by one: a bulk write of 1,000
    memories spent 0.5 s on it)."""
    if not events:
        return
    at = datetime.now(UTC).isoformat()
    batch: list[Event] = [
        {"type": type, "project": project_slug, "at": at, "data": data} for type, data in events
    ]
    transaction.on_commit(lambda: _send(project_id, batch))


def _send(project_id: int, events: list[Event]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(_group_send)(layer, project_group(project_id), events)
    except Exception:  # a broken channel layer must never fail a committed write
        logger.exception("could not send %s", ", ".join(sorted({e["type"] for e in events})))


async def _group_send(layer: Any, group: str, events: list[Event]) -> None:
    for event in events:
        await layer.group_send(group, {"type": "memory.event", "event": event})
