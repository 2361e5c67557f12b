"""Create, update, delete and restore memories, with history on every change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from memories.memory_scope import SCOPE_FIELDS, Scope
from memories.models import (
    PERMANENT_IMPORTANCE,
    HistoryEvent,
    Memory,
    default_importance,
    infer_ttl_tier,
)
from memories.selectors.filters import ALL_STATES, MemoryFilters, apply_filters
from memories.services.content import (
    check_memory_type,
    check_metadata,
    check_tags,
    clean_content,
    clean_context,
    content_hash,
)
from memories.services.dedup import merge_near_duplicate
from memories.services.embedding import embed_or_none
from memories.services.episodes import episodes_for_memories
from memories.services.layers import check_layer, layer_on_write
from memories.services.pii import scrub_for_storage
from memories.services.summaries import summaries_enqueue, summary_cleared
from memories.services.utility import utility_enqueue
from memories.services.write_kernel import (
    DUPLICATE_CONSTRAINT,
    EDITABLE_FIELDS,
    CreateResult,
    announce_stored,
    build_memory,
    check_not_doomed,
    emit_memory_event,
    find_live_duplicate,
    history_entry,
    insert_memory,
    snapshot,
    soft_delete,
)
from platformcore.lib.actor import Actor
from platformcore.lib.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    check_unit_interval,
    parse_uuid,
)
from platformcore.lib.hooks import run_hooks
from platformcore.lib.stages import stage
from platformcore.lib.tokens import count_tokens
from tenants.models import Project

_CHECKS = {
    "content": clean_content,
    "context": clean_context,
    "memory_type": check_memory_type,
    "tags": check_tags,
    "metadata": check_metadata,
    "confidence": lambda value: check_unit_interval("confidence", value),
    "importance": lambda value: check_unit_interval("importance", value),
    "layer": check_layer,
}


@dataclass
class MemoryInput:
    content: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    memory_type: str = "observation"
    tags: list[str] = field(default_factory=list)
    confidence: float = 1.0
    importance: float | None = None  # None: the type's default (models.TYPE_IMPORTANCE)
    source: str = ""
    context: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    pinned: bool = False
    expires_at: datetime | None = None
    occurred_at: datetime | None = None  # when it happened or was said, if not when stored
    entity_names: list[str] = field(default_factory=list)
    extract_entities: bool = True  # False: link entity_names only, extract nothing from text
    layer: str | None = None  # None: chosen from the write (services/layers.py)
    episode_id: Any = None  # None: the run's open episode, if any (services/episodes.py)

    def scope(self) -> Scope:
        return Scope.of(self)


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    return {
        name: _CHECKS[name](value) if name in _CHECKS else value for name, value in values.items()
    }


@transaction.atomic
def memory_create(
    *, project: Project, data: MemoryInput, actor: Actor, embedding: list[float] | None = None
) -> CreateResult:
    """Store one memory. Exact duplicates (same content, project and scope) return the
    existing memory with created=False instead of a second row, also under concurrency; a
    near-duplicate (cosine >= 0.95, same scope) is merged into the older memory (dedup.py).
    `embedding`, when the caller already has it, saves a second embedding call."""
    scope = data.scope()
    values = scrub_for_storage(project=project, values=validated(data))  # before hash, embed
    memory = build_memory(project, with_defaults(values), scope)
    episodes_for_memories(project=project, memories=[memory], requested=[data.episode_id])
    with stage("duplicate"):
        existing = find_live_duplicate(project=project, digest=memory.content_hash, scope=scope)
    if existing is not None:
        result = CreateResult(existing, created=False)
    else:
        with stage("embed"):
            memory.embedding = embedding or embed_or_none([memory.content])[0]
        with stage("near_duplicate"):
            survivor = merge_near_duplicate(memory=memory, actor=actor)  # takes the scope's lock
        if survivor is not None:
            result = CreateResult(survivor, created=False)
        else:  # a concurrent exact duplicate still wins here, on the unique constraint
            with stage("insert"):
                result = insert_memory(memory, actor)
    with stage("graph"):
        announce_stored(project, [result], [data])
    with stage("counters"):
        after_inserts(project, [result])
    return result


def validated(data: MemoryInput) -> dict[str, Any]:
    """The fields `data` gives, each checked (InvalidInput names the field)."""
    given = {name: getattr(data, name) for name in EDITABLE_FIELDS}
    return _clean({name: value for name, value in given.items() if value is not None})


def with_defaults(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with the type's importance and its layer (layers.py) where not given."""
    values.setdefault("importance", default_importance(values["memory_type"]))
    values.setdefault("layer", layer_on_write(requested=None, memory_type=values["memory_type"]))
    return values


def after_inserts(project: Project, results: list[CreateResult]) -> None:
    """The counters and jobs of new memories: consolidation every N inserts (one count for
    the write), their utility score and their summary."""
    # consolidation imports contradictions, whose superseding (supersede.py) calls this
    # module's memory_update: imported here, where the loop is closed
    from memories.services.consolidation import count_insert

    created = [result.memory for result in results if result.created]
    if created:
        count_insert(project=project, count=len(created))
        utility_enqueue(project=project, memory_ids=[memory.pk for memory in created])
        summaries_enqueue(project=project, memories=created)


def _get_for_write(project: Project, memory_id: UUID | str) -> Memory:
    pk = parse_uuid(memory_id, what="memory")
    memory = Memory.objects.for_project(project).alive().select_for_update().filter(pk=pk).first()
    if memory is None:
        raise NotFound("memory not found")
    return memory


@transaction.atomic
def memory_update(
    *, project: Project, memory_id: UUID | str, changes: dict[str, Any], actor: Actor
) -> Memory:
    """Change editable fields. New content re-hashes, re-embeds and bumps `version`."""
    values = scrub_for_storage(project=project, values=editable(changes))  # before hash, embed
    memory = _get_for_write(project, memory_id)
    changed = {name: value for name, value in values.items() if getattr(memory, name) != value}
    if not changed:
        return memory
    old = snapshot(memory, tuple(changed))
    apply_changes(memory, changed)
    save_unless_duplicate(memory)
    history_entry(memory, HistoryEvent.UPDATE, actor, old=old, new=changed).save()
    emit_memory_event(
        project, memory, "memory_updated", changes=sorted(changed), version=memory.version
    )
    if "content" in changed:
        after_new_content(project, memory)
    return memory


def editable(changes: dict[str, Any]) -> dict[str, Any]:
    """`changes`, each checked; a scope, read-only or unknown field is an InvalidInput."""
    unknown = sorted(set(changes) - set(EDITABLE_FIELDS))
    if unknown:
        fixed = [name for name in unknown if name in SCOPE_FIELDS]
        message = "scope fields cannot be changed" if fixed else "unknown or read-only field"
        raise InvalidInput(message, fields={name: [message] for name in unknown})
    return _clean(changes)


def apply_changes(memory: Memory, changed: dict[str, Any]) -> None:
    """Set the changed fields and what follows from them: new content is hashed, counted,
    embedded, versioned and loses its summary; a new type or importance re-infers the TTL
    tier, as Memento does."""
    for name, value in changed.items():
        setattr(memory, name, value)
    if "content" in changed:
        memory.content_hash = content_hash(memory.content)
        memory.token_count = count_tokens(memory.content)
        memory.embedding = embed_or_none([memory.content])[0]
        memory.version += 1
        summary_cleared(memory)
    if "memory_type" in changed or "importance" in changed:
        memory.ttl_tier = infer_ttl_tier(memory.memory_type, memory.importance)
    memory.updated_at = timezone.now()


def save_unless_duplicate(memory: Memory) -> None:
    """Save; content another live memory of the scope already holds is a Conflict."""
    try:
        with transaction.atomic():
            memory.save()
    except IntegrityError as exc:
        if DUPLICATE_CONSTRAINT not in str(exc):
            raise
        raise Conflict(
            "another memory in this scope already has this content",
            fields={"content": ["duplicate of an existing memory"]},
        ) from exc


def after_new_content(project: Project, memory: Memory) -> None:
    """New facts may add or close relations in the graph; the utility score and the summary
    are computed again."""
    run_hooks("memories_stored", project=project, stored=[(memory, True, [])])
    check_not_doomed()
    utility_enqueue(project=project, memory_ids=[memory.pk])
    summaries_enqueue(project=project, memories=[memory])


@transaction.atomic
def memory_delete(
    *, project: Project, memory_id: UUID | str, actor: Actor, reason: str = ""
) -> None:
    """Soft delete: the row stays for history; every read stops seeing it."""
    soft_delete(project, [_get_for_write(project, memory_id)], actor, reason)


@transaction.atomic
def memories_delete_scope(*, project: Project, scope: Scope, actor: Actor) -> int:
    """Delete every live memory of one scope (all given scope fields must match)."""
    if scope.is_empty:
        raise InvalidInput(
            "refusing to delete without a scope: give user_id, agent_id or run_id",
            fields={name: ["required for bulk delete"] for name in SCOPE_FIELDS},
        )
    memories = list(
        Memory.objects.for_project(project).alive().filter(**scope.as_filter()).select_for_update()
    )
    return soft_delete(project, memories, actor, reason="delete_all")


@transaction.atomic
def memory_restore(*, project: Project, memory_id: UUID | str, actor: Actor) -> Memory:
    """Bring back a soft-deleted memory, unless a live duplicate took its place."""
    memory = (
        Memory.objects.for_project(project)
        .filter(pk=parse_uuid(memory_id, what="memory"), deleted_at__isnull=False)
        .select_for_update()
        .first()
    )
    if memory is None:
        raise NotFound("no deleted memory with this id")
    memory.deleted_at = None
    memory.updated_at = timezone.now()
    # deleted before a model switch, which embeds live rows only: embedded as it comes back,
    # its content and its summary in one batch
    missing = {"embedding": memory.content} if memory.embedding is None else {}
    if memory.summary and memory.summary_embedding is None:
        missing["summary_embedding"] = memory.summary
    for name, vector in zip(missing, embed_or_none(list(missing.values())), strict=True):
        setattr(memory, name, vector)
    fields = ["deleted_at", "updated_at", *missing]
    try:
        with transaction.atomic():
            memory.save(update_fields=fields)
    except IntegrityError as exc:
        raise Conflict("a live memory with the same content exists in this scope") from exc
    history_entry(memory, HistoryEvent.RESTORE, actor, new={"content": memory.content}).save()
    emit_memory_event(project, memory, "memory_restored")
    return memory


@dataclass(frozen=True)
class DeleteResult:
    deleted_ids: list[str]
    skipped_pinned_ids: list[str]


_DELETE_CRITERIA = (
    "user_id",
    "agent_id",
    "run_id",
    "memory_types",
    "tags",
    "source",
    "created_after",
    "created_before",
    "expression",
)


@transaction.atomic
def memories_delete(
    *,
    project: Project,
    actor: Actor,
    memory_ids: Sequence[UUID | str] | None = None,
    filters: Any = None,
    confidence_below: float | None = None,
    force: bool = False,
    protect_permanent: bool = False,
    reason: str = "",
) -> DeleteResult:
    """Soft-delete by ids and/or a filter (`MemoryFilters`; `confidence_below` is decay-aware).
    At least one criterion is required; an unknown id fails the whole call; pinned memories
    (and with `protect_permanent` preferences and importance >= 0.8, Memento's permanent
    tier) are kept and reported unless `force`."""
    given = [name for name in _DELETE_CRITERIA if filters is not None and getattr(filters, name)]
    if not memory_ids and not given and confidence_below is None:
        message = "give memory_ids or at least one filter to delete by"
        raise InvalidInput(message, fields={"memory_ids": [message]})
    queryset: QuerySet[Memory] = Memory.objects.for_project(project).alive()
    if memory_ids:
        pks = [parse_uuid(value, what="memory") for value in memory_ids]
        found = set(queryset.filter(pk__in=pks).values_list("pk", flat=True))
        missing = [str(pk) for pk in pks if pk not in found]
        if missing:
            raise NotFound(f"{len(missing)} memory id(s) not found", fields={"memory_ids": missing})
        queryset = queryset.filter(pk__in=pks)
    if filters is not None:
        queryset = apply_filters(queryset, filters)
    if confidence_below is not None:
        check_unit_interval("confidence_below", confidence_below)
        if filters is None:
            queryset = apply_filters(queryset, _all_states())
        queryset = queryset.filter(effective_confidence__lt=confidence_below)  # type: ignore[misc]
    memories = list(queryset.select_for_update(of=("self",)))

    def protected(memory: Memory) -> bool:
        permanent = memory.memory_type == "preference" or memory.importance >= PERMANENT_IMPORTANCE
        return memory.pinned or (protect_permanent and permanent)

    kept = [memory for memory in memories if protected(memory) and not force]
    doomed = [memory for memory in memories if force or not protected(memory)]
    soft_delete(project, doomed, actor, reason)
    return DeleteResult(
        deleted_ids=[str(memory.pk) for memory in doomed],
        skipped_pinned_ids=[str(memory.pk) for memory in kept],
    )


def _all_states() -> Any:
    return MemoryFilters(states=[ALL_STATES])
