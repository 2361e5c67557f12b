"""What every write of a memory does, whichever policies run around it: build the row from
values the policies have prepared, insert it (a concurrent exact duplicate wins the race
instead), write the history entry of the change, send its events once the transaction
commits, and tell the knowledge graph what was stored. It imports no policy (dedup, PII,
episodes, layers, consolidation, counters): the services in memories.py and bulk.py call
those from the top, and this module below them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from django.db import IntegrityError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from memories.memory_scope import SCOPE_FIELDS, Scope
from memories.models import HistoryEvent, Memory, MemoryHistory, infer_ttl_tier
from memories.services.content import content_hash
from platformcore.events import EventScope, EventType, emit_many
from platformcore.lib.actor import Actor
from platformcore.lib.errors import Conflict
from platformcore.lib.hooks import run_hooks
from platformcore.lib.tokens import count_tokens
from tenants.models import Project

DUPLICATE_CONSTRAINT = "memory_unique_live_content_per_scope"

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
    """The events of a set-wise write, in order, in one batch (platformcore.events)."""
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


@dataclass(frozen=True)
class CreateResult:
    memory: Memory
    created: bool


class StoredItem(Protocol):
    """What the knowledge graph needs to know of a write's input (MemoryInput has it)."""

    entity_names: list[str]
    extract_entities: bool


def find_live_duplicate(*, project: Project, digest: str, scope: Scope) -> Memory | None:
    """The live memory of exactly `scope` with this content, if any: asked by one statement
    written out (a store almost never has one, and compiling the query cost more than the
    index probe), loaded whole only when found."""
    in_scope, values = scope.exact_sql("m")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM {Memory._meta.db_table} AS m WHERE m.project_id = %s"
            f" AND m.content_hash = %s AND m.deleted_at IS NULL AND {in_scope} LIMIT 1",
            [project.pk, digest, *values],
        )
        found = cursor.fetchone()
    return None if found is None else Memory.objects.for_project(project).get(pk=found[0])


def build_memory(project: Project, values: dict[str, Any], scope: Scope) -> Memory:
    """The unsaved row of a new memory from `values` already validated, masked and given
    their defaults (`memory_type`, `importance` and `layer` set) by the policies."""
    return Memory(
        project=project,
        **values,
        ttl_tier=infer_ttl_tier(values["memory_type"], values["importance"]),
        **scope.as_dict(),
        content_hash=content_hash(values["content"]),
        token_count=count_tokens(values["content"]),
    )


def insert_memory(memory: Memory, actor: Actor) -> CreateResult:
    """Insert `memory` with its ADD history entry and `memory_created` event; if a concurrent
    write stored the same content in the same scope first (the live-duplicate constraint),
    return that memory with created=False instead."""
    try:
        with transaction.atomic():
            memory.save(force_insert=True)
    except IntegrityError as exc:
        if DUPLICATE_CONSTRAINT not in str(exc):
            raise
        winner = find_live_duplicate(
            project=memory.project, digest=memory.content_hash, scope=Scope.of(memory)
        )
        if winner is None:  # the winner was deleted meanwhile: nothing sensible to return
            raise Conflict("a concurrent write changed this memory; retry") from exc
        return CreateResult(winner, created=False)
    history_entry(memory, HistoryEvent.ADD, actor, new=snapshot(memory)).save()
    emit_memory_event(
        memory.project,
        memory,
        "memory_created",
        content=memory.content,
        memory_type=memory.memory_type,
    )
    return CreateResult(memory, created=True)


def announce_stored(
    project: Project, results: Sequence[CreateResult], items: Sequence[StoredItem]
) -> None:
    """Tell the knowledge graph (the `memories_stored` hook) what was stored: it links
    `entity_names` and extracts entities and relations from the new memories."""
    stored = [
        (r.memory, r.created and i.extract_entities, i.entity_names)
        for r, i in zip(results, items, strict=True)
    ]
    run_hooks("memories_stored", project=project, stored=stored)
    check_not_doomed()


def check_not_doomed() -> None:
    """Raise if a hook swallowed a failure that doomed the write's transaction (a savepoint
    that could not be rolled back, a lost connection): the atomic block would otherwise roll
    the write back without a word, and the caller answer as if it were stored."""
    if connection.in_atomic_block and transaction.get_rollback():
        raise TransactionManagementError("the write's transaction failed in a hook")


def soft_delete(project: Project, memories: list[Memory], actor: Actor, reason: str = "") -> int:
    """Soft-delete `memories` (locked by the caller), each with a DELETE history entry
    naming `reason`, and a `memory_deleted` event each (one batch)."""
    now = timezone.now()
    ids = [memory.pk for memory in memories]
    Memory.objects.filter(pk__in=ids).update(deleted_at=now, updated_at=now)
    note = {"reason": reason} if reason else {}
    MemoryHistory.objects.bulk_create(
        history_entry(memory, HistoryEvent.DELETE, actor, old={"content": memory.content}, new=note)
        for memory in memories
    )
    emit_memory_events(project, [(memory, "memory_deleted", {}) for memory in memories])
    return len(ids)
