"""What every write of a memory does, whichever policies run around it: the history entry
of a change and the events it sends once the transaction commits. It imports no policy
(dedup, PII, episodes, layers, consolidation): those call it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memories.memory_scope import SCOPE_FIELDS
from memories.models import Memory, MemoryHistory
from memoryplatform.events import EventScope, EventType, emit_many
from memoryplatform.lib.actor import Actor
from tenants.models import Project

# Fields a caller may set on create and change on update (scope is fixed at creation).
EDITABLE_FIELDS = (
    "content",
    "memory_type",
    "tags",
    "confidence",
    "importance",
    "source",
    "context",
    "metadata",
    "pinned",
    "expires_at",
    "occurred_at",
    "layer",
)


def history_entry(
    memory: Memory,
    event: str,
    actor: Actor,
    *,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
) -> MemoryHistory:
    old, new = old or {}, new or {}
    return MemoryHistory(
        project_id=memory.project_id,
        memory=memory,
        event=event,
        old_content=old.get("content"),
        new_content=new.get("content"),
        old_values=_jsonable(old),
        new_values=_jsonable(new),
        actor=str(actor),
        user_id=memory.user_id,
        agent_id=memory.agent_id,
        run_id=memory.run_id,
    )


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value.isoformat() if isinstance(value, datetime) else value
        for key, value in values.items()
    }


def emit_memory_event(project: Project, memory: Memory, type: EventType, **data: Any) -> None:
    emit_memory_events(project, [(memory, type, data)])


def emit_memory_events(
    project: Project, events: list[tuple[Memory, EventType, dict[str, Any]]]
) -> None:
    """The events of a set-wise write, in order, in one batch (memoryplatform.events)."""
    emit_many(
        project_id=project.pk,
        project_slug=project.slug,
        events=[
            (type, {"id": str(memory.pk), **data}, _event_scope(memory))
            for memory, type, data in events
        ],
    )


def _event_scope(memory: Memory) -> EventScope:
    """Whose memory it is, so a live-feed client can subscribe to one user, agent or run."""
    return {name: value for name in SCOPE_FIELDS if (value := getattr(memory, name))}  # type: ignore[misc]


def snapshot(memory: Memory, names: tuple[str, ...] = EDITABLE_FIELDS) -> dict[str, Any]:
    return {name: getattr(memory, name) for name in names}
