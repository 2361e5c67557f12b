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
]


class Event(TypedDict):
    type: EventType
    project: str
    at: str
    data: dict[str, Any]


def project_group(project_id: int) -> str:
    return f"project-{project_id}"


def emit(*, project_id: int, project_slug: str, type: EventType, data: dict[str, Any]) -> None:
    event: Event = {
        "type": type,
        "project": project_slug,
        "at": datetime.now(UTC).isoformat(),
        "data": data,
    }
    transaction.on_commit(lambda: _send(project_id, event))


def _send(project_id: int, event: Event) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            project_group(project_id), {"type": "memory.event", "event": event}
        )
    except Exception:  # a broken channel layer must never fail a committed write
        logger.exception("could not send %s event", event["type"])
