"""Memory layers: the layer a write gets, short-term expiry and promotion (docs/episodes.md).

On write, a memory's layer is the one its writer gave, else:
- `episodic` for a memory of type `episode` (an episode's summary is one);
- `documentary` for a fact the `add` pipeline learned from a document chunk;
- `long_term` otherwise, a run's memories included (and every memory stored before layers
  existed): mem0's run memories and every other client's stay until something the user can
  see removes them, so nothing expires unless its writer asked for `short_term`.
`short_term` (a session's working memory, which expires) and `semantic` (general knowledge,
true beyond any user or session) are only ever chosen by the writer.

The layer job (`memories_layers_maintain`, scheduled hourly) first promotes the short-term
memories worth keeping to long-term: pinned ones, those of importance at least
MEMORY_SHORT_TERM_PROMOTE_IMPORTANCE (preferences, decisions, errors by default) and those read
at least MEMORY_SHORT_TERM_PROMOTE_ACCESSES times; each promotion is an UPDATE in the memory's
history (`layer` short_term → long_term, reason "promoted"), and consolidation then merges the
promoted memories with their scope's near-duplicates. It then expires the short-term memories
left untouched (neither stored nor read) for the project's `short_term_ttl_hours`
(MEMORY_SHORT_TERM_TTL_HOURS, 24; 0: never): each is soft-deleted with a DELETE history
entry whose reason is "short_term_expired" and a `memory_deleted` event, so nothing a user
stored vanishes without a cause they can see, and `POST /memories/{id}/restore/` brings it
back. Both steps work in batches of BATCH_SIZE, one transaction each, until none is left.

A session's working memory (its run's short-term memories; Memento's `scope: "session"`)
ends with the session (`session_close`): explicitly (an episode of the run closed, `reflect`,
`POST /session/close/`, the MCP session's end) or after `session_idle_minutes` without a
write or read (`sessions_close_idle`, a job every few minutes). What the promotion rule keeps
(and what the caller names in `promote`) moves to long-term; the rest is soft-deleted with the
reason "session_closed", restorable, and one `session_closed` event sums it up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from memories.models import HistoryEvent, Memory, MemoryHistory, MemoryLayer, MemoryType
from memories.services.tuning import tuning
from memories.services.write_kernel import soft_delete
from platformcore.events import emit
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput, check_choice, parse_uuid
from tenants.models import Project

EXPIRY_REASON = "short_term_expired"
SESSION_CLOSED_REASON = "session_closed"
PROMOTION_REASON = "promoted"
MAX_PROMOTE = 1000
BATCH_SIZE = 1000
REPORTED_IDS = 100


def check_layer(value: Any, field_name: str = "layer") -> str:
    return check_choice(field_name, value, MemoryLayer.values)


def check_layers(values: Any) -> list[str]:
    """A list of layer names (a filter), each checked."""
    if not isinstance(values, list):
        raise InvalidInput("layer must be a list of layers", fields={"layer": ["a list"]})
    return [check_layer(value) for value in values]


def layer_on_write(*, requested: str | None, memory_type: str) -> str:
    """The layer of a new memory whose writer named none (see the module docstring; the add
    pipeline names `documentary` for what it learns from a document)."""
    if requested:
        return check_layer(requested)
    if memory_type == MemoryType.EPISODE:
        return MemoryLayer.EPISODIC
    return MemoryLayer.LONG_TERM


def short_term_ttl(project: Project) -> timedelta | None:
    """How long a short-term memory lives untouched; None (a setting of 0): for ever."""
    hours = tuning(project, "short_term_ttl_hours")
    if isinstance(hours, bool) or not isinstance(hours, int | float) or hours < 0:
        message = "short_term_ttl_hours must be a number of hours, 0 for no expiry"
        raise InvalidInput(message, fields={"short_term_ttl_hours": [message]})
    return timedelta(hours=float(hours)) if hours else None


def _short_term(project: Project) -> QuerySet[Memory]:
    return Memory.objects.for_project(project).alive().filter(layer=MemoryLayer.SHORT_TERM)


def promotable(project: Project) -> QuerySet[Memory]:
    """The live short-term memories the job would promote now."""
    worth_keeping = (
        Q(pinned=True)
        | Q(importance__gte=settings.MEMORY_SHORT_TERM_PROMOTE_IMPORTANCE)
        | Q(access_count__gte=settings.MEMORY_SHORT_TERM_PROMOTE_ACCESSES)
    )
    return _short_term(project).filter(worth_keeping)


def expirable(project: Project, now: datetime) -> QuerySet[Memory]:
    """The live short-term memories, not worth promoting, untouched for the project's TTL."""
    ttl = short_term_ttl(project)
    if ttl is None:
        return Memory.objects.none()
    cutoff = now - ttl
    return (
        _short_term(project)
        .exclude(pk__in=promotable(project).values("pk"))
        .alias(touched=Coalesce("last_accessed_at", "created_at"))
        .filter(touched__lt=cutoff)
    )


@dataclass
class LayerReport:
    promoted: int = 0
    expired: int = 0
    consolidated: int = 0  # memories merged into others after the promotions
    promoted_ids: list[str] = field(default_factory=list)
    expired_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def memories_layers_maintain(
    *, project: Project, actor: Actor, now: datetime | None = None, consolidate: bool = True
) -> LayerReport:
    """Promote the short-term memories worth keeping, consolidate them, then expire the
    short-term memories past their time (see the module docstring)."""
    now = now or timezone.now()
    report = LayerReport()
    started = timezone.now()
    promoted = memories_promote(project=project, actor=actor)
    report.promoted, report.promoted_ids = len(promoted), promoted[:REPORTED_IDS]
    if promoted and consolidate:
        # consolidation judges contradictions, which supersede through memory_update, whose
        # module calls this one on every write: this import closes a loop
        from memories.services.consolidation import memories_consolidate

        merged = memories_consolidate(project=project, actor=actor, since=started)
        report.consolidated = merged.as_dict().get("memories_merged", 0)
    expired = memories_expire_short_term(project=project, actor=actor, now=now)
    report.expired, report.expired_ids = len(expired), expired[:REPORTED_IDS]
    return report


def memories_promote(*, project: Project, actor: Actor, ids: list[Any] | None = None) -> list[str]:
    """Move short-term memories to long-term: those the job finds worth keeping, or the
    given `ids` (a caller's explicit promotion). Each gets an UPDATE history entry; one
    transaction and one `memories_promoted` event per batch of BATCH_SIZE."""
    queryset = _short_term(project).filter(pk__in=ids) if ids is not None else promotable(project)
    return _in_batches(lambda: _promote_batch(project, actor, queryset))


def memories_expire_short_term(
    *, project: Project, actor: Actor, now: datetime | None = None
) -> list[str]:
    """Soft-delete the expired short-term memories, each with a DELETE history entry naming
    the cause ("short_term_expired"); restorable like any deleted memory. One transaction
    per batch of BATCH_SIZE."""
    queryset = expirable(project, now or timezone.now())
    return _in_batches(lambda: _expire_batch(project, actor, queryset))


def _in_batches(batch: Callable[[], list[str]]) -> list[str]:
    done: list[str] = []
    while True:
        ids = batch()
        done += ids
        if len(ids) < BATCH_SIZE:
            return done


@transaction.atomic
def _promote_batch(project: Project, actor: Actor, queryset: QuerySet[Memory]) -> list[str]:
    memories = list(queryset.select_for_update().defer("embedding")[:BATCH_SIZE])
    if not memories:
        return []
    Memory.objects.filter(pk__in=[m.pk for m in memories]).update(
        layer=MemoryLayer.LONG_TERM, updated_at=timezone.now()
    )
    MemoryHistory.objects.bulk_create(
        _layer_history(memory, actor, PROMOTION_REASON) for memory in memories
    )
    promoted = [str(memory.pk) for memory in memories]
    _emit(project, "memories_promoted", promoted)
    return promoted


@transaction.atomic
def _expire_batch(project: Project, actor: Actor, queryset: QuerySet[Memory]) -> list[str]:
    memories = list(queryset.select_for_update().defer("embedding")[:BATCH_SIZE])
    soft_delete(project, memories, actor, EXPIRY_REASON)
    return [str(memory.pk) for memory in memories]


def _layer_history(memory: Memory, actor: Actor, reason: str) -> MemoryHistory:
    return MemoryHistory(
        project_id=memory.project_id,
        memory=memory,
        event=HistoryEvent.UPDATE,
        old_values={"layer": memory.layer},
        new_values={"layer": MemoryLayer.LONG_TERM, "reason": reason},
        actor=str(actor),
        user_id=memory.user_id,
        agent_id=memory.agent_id,
        run_id=memory.run_id,
    )


def _emit(project: Project, type: Any, ids: list[str]) -> None:
    emit(
        project_id=project.pk,
        project_slug=project.slug,
        type=type,
        data={"count": len(ids), "ids": ids[:REPORTED_IDS]},
    )


# --- sessions ---------------------------------------------------------------------------


@dataclass
class SessionCloseReport:
    session_id: str
    promoted_ids: list[str] = field(default_factory=list)
    expired_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "promoted": len(self.promoted_ids),
            "expired": len(self.expired_ids),
            "promoted_ids": self.promoted_ids[:REPORTED_IDS],
            "expired_ids": self.expired_ids[:REPORTED_IDS],
        }


def check_promote(values: Any) -> list[Any]:
    """Memory ids a caller promotes out of a session's working memory."""
    if values is None:
        return []
    if not isinstance(values, list) or len(values) > MAX_PROMOTE:
        message = f"a list of at most {MAX_PROMOTE} memory ids"
        raise InvalidInput(message, fields={"promote": [message]})
    try:
        return [parse_uuid(value, what="memory") for value in values]
    except Exception as exc:
        raise InvalidInput("not a memory id", fields={"promote": ["not a memory id"]}) from exc


@transaction.atomic
def session_close(
    *,
    project: Project,
    session_id: str,
    actor: Actor,
    promote: list[Any] | None = None,
    reason: str = SESSION_CLOSED_REASON,
) -> SessionCloseReport:
    """End a session's working memory: its run's live short-term memories that the promotion
    rule keeps, and those in `promote`, move to long-term; the others are soft-deleted (each
    with a DELETE history entry naming `reason` and a `memory_deleted` event). One
    `session_closed` event. A session with no working memory left changes nothing."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInput("session_id is required", fields={"session_id": ["required"]})
    wanted = check_promote(promote)
    report = SessionCloseReport(session_id)
    working = _short_term(project).filter(run_id=session_id)
    kept = Q(pk__in=promotable(project).filter(run_id=session_id).values("pk")) | Q(pk__in=wanted)
    report.promoted_ids = _promote_batch(project, actor, working.filter(kept))
    doomed = list(working.exclude(kept).select_for_update().defer("embedding"))
    soft_delete(project, doomed, actor, reason)
    report.expired_ids = [str(memory.pk) for memory in doomed]
    if report.promoted_ids or report.expired_ids:
        emit(
            project_id=project.pk,
            project_slug=project.slug,
            type="session_closed",
            data=report.as_dict(),
            scope={"run_id": session_id},
        )
    return report


def idle_sessions(project: Project, now: datetime) -> list[str]:
    """The runs whose working memory nobody wrote or read for the project's
    `session_idle_minutes` (none when that is 0)."""
    minutes = tuning(project, "session_idle_minutes")
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes < 0:
        message = "session_idle_minutes must be a number of minutes, 0 for explicit closes only"
        raise InvalidInput(message, fields={"session_idle_minutes": [message]})
    if not minutes:
        return []
    cutoff = now - timedelta(minutes=float(minutes))
    runs = (
        _short_term(project)
        .filter(run_id__isnull=False)
        .values("run_id")
        .annotate(touched=Max(Coalesce("last_accessed_at", "created_at")))
        .filter(touched__lt=cutoff)
        .order_by("run_id")
    )
    return [row["run_id"] for row in runs]


def sessions_close_idle(
    *, project: Project, actor: Actor, now: datetime | None = None
) -> list[SessionCloseReport]:
    """Close every session idle past the project's `session_idle_minutes`."""
    now = now or timezone.now()
    return [
        session_close(project=project, session_id=run, actor=actor)
        for run in idle_sessions(project, now)
    ]
