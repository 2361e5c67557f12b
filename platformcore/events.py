"""Live events: sent to the project's channel-layer group after the transaction commits.

Services call `emit(...)`; websocket consumers and SSE streams (and anything else listening on
the group) receive `{"type": "memory.event", "event": <Event>}`. Nothing is sent for a
rolled-back write. Each event gets an id from the replay buffer (platformcore/event_log.py)
before it is sent, so a client that reconnects can ask for what it missed.

`Event` below is the one schema of the feed: the websocket, SSE and `GET /api/v1/events/schema/`
(JSON Schema for client authors) all come from it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, get_args

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 (the schema)

from platformcore.event_log import event_log
from platformcore.lib.after_response import after_commit_and_response

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
    "decay_paused",
    "decay_resumed",
    "memories_pruned",
    "memories_promoted",
    "session_closed",
    "episode_started",
    "episode_closed",
]
EVENT_TYPES: frozenset[str] = frozenset(get_args(EventType))
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")


class EventScope(TypedDict, total=False):
    """Whose memory an event is about; absent on project-wide events (maintenance)."""

    user_id: str
    agent_id: str
    run_id: str


class Event(TypedDict):
    """One live-feed event. `id` increases with each event of the project: resume after it."""

    id: NotRequired[int]
    type: EventType
    project: str
    at: str
    scope: NotRequired[EventScope]
    data: dict[str, Any]


# (type, data) or (type, data, scope)
EventSpec = tuple[EventType, dict[str, Any]] | tuple[EventType, dict[str, Any], EventScope]


def sse_frame(name: str, data: Any, event_id: int | None = None) -> str:
    """One Server-Sent Events frame (`id:`, `event:`, `data:` as JSON)."""
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {name}\ndata: {json.dumps(data)}\n\n"


def project_group(project_id: int) -> str:
    return f"project-{project_id}"


def emit(
    *,
    project_id: int,
    project_slug: str,
    type: EventType,
    data: dict[str, Any],
    scope: EventScope | None = None,
) -> None:
    spec: EventSpec = (type, data, scope) if scope else (type, data)
    emit_many(project_id=project_id, project_slug=project_slug, events=[spec])


def emit_many(*, project_id: int, project_slug: str, events: list[EventSpec]) -> None:
    """Several events of one project, sent in order after the commit (and after the answer of
    an API request: platformcore/lib/after_response.py) with one hop to the
    channel layer's event loop (a hop per event would cost a bulk write of 1,000 memories
    a thousand hops) and one write to the replay buffer."""
    if not events:
        return
    at = datetime.now(UTC).isoformat()
    batch = [_event(project_slug, at, spec) for spec in events]
    after_commit_and_response(lambda: _send(project_id, batch))


def _event(project_slug: str, at: str, spec: EventSpec) -> Event:
    event: Event = {"type": spec[0], "project": project_slug, "at": at, "data": spec[1]}
    scope = spec[2] if len(spec) > 2 else None  # type: ignore[misc]
    if scope:
        event["scope"] = {k: v for k, v in scope.items() if v}  # type: ignore[typeddict-item]
    return event


def _send(project_id: int, events: list[Event]) -> None:
    try:
        events = event_log().append(project_id, events)
    except Exception:  # a live client still gets the events; only a resume would miss them
        logger.exception("could not record events in the replay buffer")
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


def events_since(project_id: int, last_id: int, limit: int = 1000) -> list[Event]:
    """The events of a project after `last_id` still in the replay buffer, oldest first."""
    return event_log().since(project_id, last_id, limit)


class InvalidSubscription(ValueError):
    """A subscription filter that names an unknown event type or field."""


@dataclass(frozen=True)
class Subscription:
    """What a client wants from its project's feed: some event types (none: all) and, for
    events about a scope, only the given user/agent/run. Project-wide events (consolidation,
    decay) carry no scope and reach every subscriber that takes their type."""

    types: frozenset[str] = frozenset()
    scope: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, *, types: Iterable[str] | str | None = None, **scope: Any) -> Subscription:
        if isinstance(types, str):
            types = [t for t in types.split(",") if t.strip()]
        if types is not None and (
            not isinstance(types, list | tuple) or not all(isinstance(t, str) for t in types)
        ):
            raise InvalidSubscription("types must be a list of event type names")
        wanted = frozenset(t.strip() for t in types or ())
        unknown = sorted(wanted - EVENT_TYPES)
        if unknown:
            raise InvalidSubscription(f"unknown event types: {', '.join(unknown)}")
        extra = sorted(set(scope) - set(SCOPE_FIELDS))
        if extra:
            raise InvalidSubscription(f"unknown filters: {', '.join(extra)}")
        if any(not isinstance(v, str | int | None) or isinstance(v, bool) for v in scope.values()):
            raise InvalidSubscription(f"{', '.join(SCOPE_FIELDS)} must be strings")
        chosen = tuple((k, str(v)) for k, v in scope.items() if v not in (None, ""))
        return cls(types=wanted, scope=chosen)

    def wants(self, event: Event) -> bool:
        if self.types and event["type"] not in self.types:
            return False
        scope = event.get("scope")
        if not scope or not self.scope:
            return True
        return all(scope.get(k) == v for k, v in self.scope)  # type: ignore[misc]

    def as_dict(self) -> dict[str, Any]:
        return {"types": sorted(self.types), **dict(self.scope)}


def event_json_schema() -> dict[str, Any]:
    """JSON Schema of `Event`, for `GET /api/v1/events/schema/` and client authors."""
    # imported here: pydantic slows the start of every process that sends events, and only
    # this schema needs it
    from pydantic import TypeAdapter

    return TypeAdapter(Event).json_schema()
