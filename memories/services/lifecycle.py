"""Lifecycle and decay, preservation, pruning and purging.

decay_score = clamp((importance × e^(−rate × days since access) + ln(1 + access_count) × boost
                     + ln(1 + links) × link_boost) × confidence, 0, 1)
rate        = (the memory's own decay_rate, else MEMORY_DECAY_RATE) × (1.5 − utility_score)
state       = active ≥ 0.5 > dormant ≥ archival (0.1) > archived

A memory's utility (services/utility.py) slows its decay (the most useful at half the rate,
the neutral 0.5 at the rate itself). The link boost (`decay_link_boost`, off by default)
keeps memories that many others link to; the links are counted when the job runs. Archived
memories with long texts are compressed to a summary (services/archive.py) and restored when
they leave the archived state. The scheduled job skips a project whose decay is paused
(services/decay_control.py); an explicit run still runs.

Precedence: preserved memories (pinned, a preservation tag, or `metadata.preserved_until` in
the future) are active with score 1.0; memories created or accessed within the grace window
(Memento's "hot" tier, 7 days) stay active; the "permanent" tier (preferences, importance
≥ 0.8) never goes below dormant.

Decay ranks, it never hides or removes: every read path returns memories of every state,
ranked by their decay-aware (effective) confidence. A memory leaves recall only when a caller
deletes it, a curator resolves it away, or the prune job removes it: effective confidence
below the prune threshold (0.05 by default, about 130 days unread at a 30-day half-life),
never a preference, a pinned or preserved memory, or one of importance ≥ 0.8. Pruning can be
switched off or given another threshold per project (`pruning`, `prune_threshold` in the
project's settings), lists its candidates before it acts, writes a DELETE history entry
(reason "pruned") and sends a `memories_pruned` event. Pruned rows are purged for good after
the retention window.

Everything runs as set-based SQL in batches of `BATCH_SIZE` rows (keyset over the primary
key), never a Python loop over rows: 100k memories take seconds.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from memories.models import PERMANENT_IMPORTANCE, MaintenanceState, Memory, MemoryState
from memories.selectors.filters import effective_confidence
from memories.services.archive import (
    memories_compress,
    memories_decompress,
    memories_decompress_revived,
)
from memories.services.decay_control import decay_paused
from memories.services.memories import memory_update
from memories.services.tiers import STALE_REASON, memories_demote_tiers, stale_q
from memories.services.tuning import tuning
from memories.services.utility import decay_factor_sql
from platformcore.events import emit
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput, NotFound, parse_uuid
from tenants.models import Project

BATCH_SIZE = 5000
PRESERVATION_TAGS = ["permanent", "important", "bookmark", "favorite", "pinned", "preserved"]
ACTIVE_THRESHOLD = 0.5
_ORDER = [MemoryState.ACTIVE, MemoryState.DORMANT, MemoryState.ARCHIVED]
_ISO = "%Y-%m-%dT%H:%M:%S"

# One scoring expression, used by the batch update and by the status of one memory.
_SCORED_TEMPLATE = """
SELECT m.id, m.state AS old_state, m.decay_score AS old_score,
       m.importance, m.confidence, m.access_count, m.pinned, m.memory_type, m.tags,
       m.metadata->>'preserved_until' AS preserved_until, m.decay_rate, m.utility_score,
       s.days, s.rate, s.links, s.boost_term, s.preserved, s.fresh, s.permanent, s.raw
FROM memories_memory m
CROSS JOIN LATERAL (
    SELECT d.days, d.rate, d.links,
           LN(1 + m.access_count) * %(boost)s + LN(1 + d.links) * %(link_boost)s AS boost_term,
           (m.pinned OR m.tags && %(ptags)s::varchar[]
            OR COALESCE(m.metadata->>'preserved_until', '') > %(now_iso)s) AS preserved,
           d.days < %(grace)s AS fresh,
           (m.memory_type = 'preference' OR m.importance >= %(permanent)s) AS permanent,
           LEAST(1.0, GREATEST(0.0,
               (m.importance * EXP(-d.rate * d.days) + LN(1 + m.access_count) * %(boost)s
                + LN(1 + d.links) * %(link_boost)s)
               * m.confidence)) AS raw
    FROM (SELECT GREATEST(0.0, EXTRACT(EPOCH FROM (%(now)s - COALESCE(m.last_accessed_at,
          m.created_at)))::float8 / 86400.0) AS days,
          COALESCE(m.decay_rate, %(rate)s) * {utility} AS rate,
          {links} AS links) d
) s
"""
# Links are counted only when the boost is on: two index probes a memory otherwise wasted.
# The project is the statement's own (every caller limits `m` to it): on Citus a statement
# whose every table is filtered by one project runs on that project's shard.
_LINKS = """((SELECT COUNT(*) FROM memories_memorylink l
             WHERE l.project_id = %(project)s AND l.from_memory_id = m.id)
          + (SELECT COUNT(*) FROM memories_memorylink l
             WHERE l.project_id = %(project)s AND l.to_memory_id = m.id))::float8"""


def _scored(link_boost: bool) -> str:
    return _SCORED_TEMPLATE.format(
        utility=decay_factor_sql("m.utility_score"), links=_LINKS if link_boost else "0.0"
    )


_NEW_STATE = """CASE WHEN sc.preserved OR sc.fresh OR sc.raw >= %(active)s THEN 'active'
     WHEN sc.raw >= %(archival)s THEN 'dormant'
     WHEN sc.permanent THEN 'dormant'
     ELSE 'archived' END"""

_DECAY_BATCH = """
WITH batch AS (
    SELECT id FROM memories_memory
    WHERE project_id = %(project)s AND deleted_at IS NULL AND id > %(after)s
    ORDER BY id LIMIT %(limit)s
), sc AS (
    {scored} JOIN batch USING (id)
), changed AS (
    UPDATE memories_memory m
    SET decay_score = CASE WHEN sc.preserved THEN 1.0 ELSE sc.raw END,
        state = {new_state}
    FROM sc
    WHERE m.id = sc.id
      AND (ABS(m.decay_score - CASE WHEN sc.preserved THEN 1.0 ELSE sc.raw END) > 0.0005
           OR m.state <> {new_state})
    RETURNING m.id, m.state AS new_state, sc.old_state
)
SELECT (SELECT id FROM batch ORDER BY id DESC LIMIT 1),
       (SELECT COUNT(*) FROM batch),
       (SELECT COALESCE(jsonb_object_agg(k, n), '{{}}'::jsonb) FROM
           (SELECT old_state || '>' || new_state AS k, COUNT(*) AS n FROM changed
            WHERE old_state <> new_state GROUP BY 1) t),
       (SELECT COUNT(*) FROM changed)
"""


def _decay_batch_sql(link_boost: bool) -> str:
    return _DECAY_BATCH.format(scored=_scored(link_boost), new_state=_NEW_STATE)


def _params(now: datetime, project: Project | None = None) -> dict[str, Any]:
    link_boost = float(tuning(project, "decay_link_boost")) if project is not None else 0.0
    return {
        "link_boost": link_boost,
        "now": now,
        "now_iso": now.astimezone(UTC).strftime(_ISO),
        "boost": settings.MEMORY_DECAY_ACCESS_BOOST,
        "rate": settings.MEMORY_DECAY_RATE,
        "grace": settings.MEMORY_DECAY_GRACE_DAYS,
        "ptags": PRESERVATION_TAGS,
        "permanent": PERMANENT_IMPORTANCE,
        "active": ACTIVE_THRESHOLD,
        "archival": settings.MEMORY_ARCHIVAL_THRESHOLD,
    }


@dataclass
class DecayReport:
    scanned: int = 0
    updated: int = 0
    transitions: dict[str, int] = field(default_factory=dict)
    compressed: int = 0  # archived memories whose text became a summary
    restored: int = 0  # compressed memories that left the archived state, text restored
    paused: bool = False  # the scheduled run found this project's decay paused
    tiers: dict[str, int] = field(default_factory=dict)  # TTL tier demotions ("hot>warm": n)

    @property
    def promoted(self) -> int:
        """Memories that moved up a state (archived > dormant, dormant > active...)."""
        return sum(n for move, n in self.transitions.items() if _moved(move) < 0)

    @property
    def demoted(self) -> int:
        return sum(n for move, n in self.transitions.items() if _moved(move) > 0)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def memories_decay(
    *,
    project: Project,
    actor: Actor,
    now: datetime | None = None,
    progress: Callable[[int], None] | None = None,
    scheduled: bool = False,
) -> DecayReport:
    """Recompute decay scores and states of the project's live memories, batch by batch,
    then compress the newly archived memories and restore those that left the archive. The
    scheduled job (`scheduled`) does nothing in a project whose decay is paused."""
    if scheduled and decay_paused(project=project):
        return DecayReport(paused=True)
    now = now or timezone.now()
    report, transitions = DecayReport(), Counter[str]()
    params = {**_params(now, project), "project": project.pk, "limit": BATCH_SIZE}
    sql = _decay_batch_sql(params["link_boost"] > 0)
    after = UUID(int=0)
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, {**params, "after": after})
            last, scanned, moved, updated = cursor.fetchone()
        if not scanned:
            break
        after = last
        report.scanned += scanned
        report.updated += updated
        transitions.update(json.loads(moved) if isinstance(moved, str) else moved)
        if progress:
            progress(scanned)
    report.transitions = dict(transitions)
    report.tiers = memories_demote_tiers(project=project, now=now)
    report.compressed = memories_compress(project=project)
    report.restored = memories_decompress_revived(project=project)
    MaintenanceState.objects.update_or_create(project=project, defaults={"last_decay_at": now})
    emit(
        project_id=project.pk,
        project_slug=project.slug,
        type="decay_complete",
        data=report.as_dict(),
    )
    return report


def _moved(move: str) -> int:
    """How many states down a transition "old>new" went (negative: up)."""
    order = [*_ORDER, MemoryState.EXPIRED]
    old, new = move.split(">")
    return order.index(MemoryState(new)) - order.index(MemoryState(old))


# --- status and preservation --------------------------------------------------------------


def _next_step(state: str, score_parts: dict[str, Any]) -> tuple[str | None, float | None]:
    """The next state down and in how many days (without access), by the same formula.
    Archived is the lowest state decay gives: only pruning goes further."""
    if state not in _ORDER[:-1]:
        return None, None
    target_state = _ORDER[_ORDER.index(MemoryState(state)) + 1]
    if target_state != MemoryState.DORMANT and score_parts["permanent"]:
        return None, None
    threshold = {
        MemoryState.DORMANT: ACTIVE_THRESHOLD,
        MemoryState.ARCHIVED: settings.MEMORY_ARCHIVAL_THRESHOLD,
    }[target_state]
    importance, confidence = score_parts["importance"], score_parts["confidence"]
    rate = score_parts["rate"]
    if confidence <= 0 or importance <= 0 or rate <= 0:
        return target_state, None
    needed = (threshold / confidence - score_parts["boost_term"]) / importance
    if needed <= 0:
        return target_state, None  # the access boost alone keeps it above the threshold
    days_total = -math.log(needed) / rate if needed < 1 else 0.0
    days = max(days_total - score_parts["days"], 0.0)
    if score_parts["fresh"]:
        days = max(days, settings.MEMORY_DECAY_GRACE_DAYS - score_parts["days"])
    return target_state, round(days, 2)


def memory_decay_status(*, project: Project, memory_id: UUID | str) -> dict[str, Any]:
    """State, stored and current score, predicted next state, preservation."""
    pk = parse_uuid(memory_id, what="memory")
    now = timezone.now()
    params = _params(now, project)
    sql = (
        f"{_scored(params['link_boost'] > 0)}"
        " WHERE m.id = %(id)s AND m.project_id = %(project)s AND m.deleted_at IS NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, {**params, "id": pk, "project": project.pk})
        row = cursor.fetchone()
        if row is None:
            raise NotFound("memory not found")
        parts = dict(zip([c.name for c in cursor.description], row, strict=True))
    state = MaintenanceState.objects.filter(project=project).first()
    preserved_by = [tag for tag in parts["tags"] if tag in PRESERVATION_TAGS]
    if parts["pinned"]:
        preserved_by.insert(0, "pinned")
    if parts["preserved_until"] and parts["preserved_until"] > _params(now)["now_iso"]:
        preserved_by.append(f"until {parts['preserved_until']}")
    next_state, in_days = (
        (None, None) if parts["preserved"] else _next_step(parts["old_state"], parts)
    )
    return {
        "id": str(pk),
        "state": parts["old_state"],
        "decay_score": round(parts["old_score"], 6),
        "current_score": round(1.0 if parts["preserved"] else parts["raw"], 6),
        "days_since_access": round(parts["days"], 3),
        "last_decay_update": state.last_decay_at if state else None,
        "preserved": bool(parts["preserved"]),
        "preserved_by": preserved_by,
        "permanent_tier": bool(parts["permanent"]),
        "in_grace_window": bool(parts["fresh"]),
        "predicted_next_state": next_state,
        "predicted_in_days": in_days,
        "predicted_prune_in_days": _prune_in_days(project, parts),
        "decay_rate": parts["decay_rate"],  # the memory's own; None: the project's
        "effective_decay_rate": round(parts["rate"], 6),  # with the utility factor
        "utility_score": parts["utility_score"],
        "links": int(parts["links"]) if params["link_boost"] > 0 else None,
        "decay_paused": state is not None and state.decay_paused_at is not None,
        "compressed": Memory.objects.filter(pk=pk, compressed=True).exists(),
    }


def _prune_in_days(project: Project, parts: dict[str, Any]) -> float | None:
    """Days (without access) until the effective confidence falls below the project's prune
    threshold; None when the memory is never pruned (exempt, or pruning switched off)."""
    threshold = float(tuning(project, "prune_threshold"))
    exempt = parts["preserved"] or parts["permanent"]
    if exempt or not tuning(project, "pruning") or threshold <= 0 or parts["confidence"] <= 0:
        return None
    half_life = settings.MEMORY_DECAY_HALF_LIFE_DAYS
    days_total = half_life * math.log2(parts["confidence"] / threshold)
    return round(max(days_total - parts["days"], 0.0), 2)


@transaction.atomic
def memory_preserve(
    *, project: Project, memory_id: UUID | str, actor: Actor, until: datetime | None = None
) -> Memory:
    """Keep a memory active: the `preserved` tag, or `metadata.preserved_until` when `until`
    is given (preservation then lapses by itself); the score goes back to 1.0."""
    memory = (
        Memory.objects.for_project(project)
        .alive()
        .filter(pk=parse_uuid(memory_id, what="memory"))
        .first()
    )
    if memory is None:
        raise NotFound("memory not found")
    if until is not None:
        if until <= timezone.now():
            raise InvalidInput("until must be in the future", fields={"until": ["in the past"]})
        stamp = until.astimezone(UTC).strftime(_ISO)
        changes: dict[str, Any] = {"metadata": {**memory.metadata, "preserved_until": stamp}}
    else:
        changes = {"tags": list(dict.fromkeys([*memory.tags, "preserved"]))}
    memory = memory_update(project=project, memory_id=memory.pk, changes=changes, actor=actor)
    Memory.objects.filter(pk=memory.pk).update(decay_score=1.0, state=MemoryState.ACTIVE)
    if memory.compressed:
        memories_decompress(project=project, memory_ids=[memory.pk])
    memory.refresh_from_db()
    return memory


# --- pruning and purging ------------------------------------------------------------------

_PRUNE_BATCH = """
WITH changed AS (
    UPDATE memories_memory m
    SET deleted_at = %(now)s, state = 'expired'
    WHERE m.id = ANY(%(ids)s) AND m.deleted_at IS NULL
    RETURNING m.id, m.project_id, m.content, m.user_id, m.agent_id, m.run_id
), history AS (
    INSERT INTO memories_memoryhistory (id, project_id, memory_id, event, old_content,
        new_content, old_values, new_values, actor, user_id, agent_id, run_id, created_at)
    SELECT gen_random_uuid(), project_id, id, 'DELETE', content, NULL, '{}'::jsonb,
           CASE WHEN id = ANY(%(stale)s::uuid[]) THEN jsonb_build_object('reason', %(stale_reason)s)
                ELSE jsonb_build_object('reason', 'pruned', 'threshold', %(threshold)s) END,
           %(actor)s, user_id, agent_id, run_id, %(now)s
    FROM changed
)
SELECT id FROM changed
"""
# _PRUNE_BATCH in two statements, for a Citus coordinator: Citus runs an INSERT from a
# modifying CTE through the coordinator with COPY, which row-level security refuses
_PRUNE_UPDATE = """
UPDATE memories_memory m SET deleted_at = %(now)s, state = 'expired'
WHERE m.project_id = %(project)s AND m.id = ANY(%(ids)s) AND m.deleted_at IS NULL
RETURNING m.id, m.content, m.user_id, m.agent_id, m.run_id
"""
_PRUNE_HISTORY_ROW = (
    "(gen_random_uuid(), %s, %s, 'DELETE', %s, NULL, '{}'::jsonb, %s::jsonb, %s, %s, %s, %s, %s)"
)
_PRUNE_HISTORY = """
INSERT INTO memories_memoryhistory (id, project_id, memory_id, event, old_content,
    new_content, old_values, new_values, actor, user_id, agent_id, run_id, created_at)
VALUES {rows}
"""
REPORTED_IDS = 100  # ids a prune report and its event name; the count covers every one


def _prune_in_steps(cursor: Any, params: dict[str, Any], project: Project) -> list[str]:
    cursor.execute(_PRUNE_UPDATE, {**params, "project": project.pk})
    changed = cursor.fetchall()
    if not changed:
        return []
    stale = {str(pk) for pk in params["stale"]}
    values: list[Any] = []
    for pk, content, user_id, agent_id, run_id in changed:
        reason = (
            {"reason": params["stale_reason"]}
            if str(pk) in stale
            else {"reason": "pruned", "threshold": params["threshold"]}
        )
        values += [project.pk, pk, content, json.dumps(reason), params["actor"]]
        values += [user_id, agent_id, run_id, params["now"]]
    rows = ", ".join([_PRUNE_HISTORY_ROW] * len(changed))
    cursor.execute(_PRUNE_HISTORY.format(rows=rows), values)
    return [str(row[0]) for row in changed]


@dataclass
class PruneReport:
    dry_run: bool
    threshold: float
    enabled: bool = True
    pruned: int = 0
    purged: int = 0
    pruned_ids: list[str] = field(default_factory=list)
    stale: int = 0  # of them, cold and stale (the project's `tier_expiry`)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def prune_threshold(project: Project, threshold: float | None = None) -> float:
    """`threshold` checked, or the project's (`prune_threshold`), or MEMORY_PRUNE_THRESHOLD."""
    threshold = tuning(project, "prune_threshold") if threshold is None else threshold
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise InvalidInput("threshold must be a number", fields={"threshold": ["a number"]})
    if not 0 <= threshold <= 1:
        raise InvalidInput("threshold must be within [0, 1]", fields={"threshold": ["[0, 1]"]})
    return float(threshold)


def prune_candidates(
    *, project: Project, threshold: float | None = None, now: datetime | None = None
) -> QuerySet[Memory]:
    """The live memories a prune would remove now: below the effective-confidence threshold
    or, with the project's `tier_expiry`, cold and stale (services/tiers.py; these first,
    as they go first), and none that is pinned, preserved (tag or date), a preference or of
    importance >= 0.8. Each carries `effective_confidence` and `stale`; the rest lowest
    effective confidence first."""
    threshold = prune_threshold(project, threshold)
    now = now or timezone.now()
    stale = stale_q(project, now)
    return (
        Memory.objects.for_project(project)
        .alive()
        .filter(pinned=False)
        .exclude(tags__overlap=PRESERVATION_TAGS)
        .exclude(Q(memory_type="preference") | Q(importance__gte=PERMANENT_IMPORTANCE))
        .exclude(
            Q(metadata__has_key="preserved_until")
            & Q(metadata__preserved_until__gt=now.astimezone(UTC).strftime(_ISO))
        )
        .alias(touched=Coalesce("last_accessed_at", "created_at"))
        .annotate(
            effective_confidence=effective_confidence(),
            stale=Case(When(stale, then=Value(True)), default=Value(False)),
        )
        .filter(Q(effective_confidence__lt=threshold) | stale)
        .order_by("-stale", "effective_confidence", "pk")
    )


def memories_prune(
    *,
    project: Project,
    actor: Actor,
    threshold: float | None = None,
    dry_run: bool = False,
    scheduled: bool = False,
    now: datetime | None = None,
    progress: Callable[[int], None] | None = None,
) -> PruneReport:
    """Soft-delete the prune candidates (`prune_candidates`), each with a DELETE history entry
    (reason "pruned") and one `memories_pruned` event, then purge pruned rows older than the
    retention window. The scheduled job (`scheduled`) does nothing in a project whose pruning
    is switched off; a caller's explicit prune always runs."""
    now = now or timezone.now()
    threshold = prune_threshold(project, threshold)
    report = PruneReport(
        dry_run=dry_run, threshold=threshold, enabled=bool(tuning(project, "pruning"))
    )
    if scheduled and not report.enabled:
        return report
    rows = list(
        prune_candidates(project=project, threshold=threshold, now=now).values_list("pk", "stale")
    )
    ids = [pk for pk, _ in rows]
    stale = [pk for pk, is_stale in rows if is_stale]
    report.stale = len(stale)
    report.pruned_ids = [str(pk) for pk in ids[:REPORTED_IDS]]
    cutoff = now - timedelta(days=settings.MEMORY_EXPIRED_RETENTION_DAYS)
    purgeable = Memory.objects.for_project(project).filter(
        state=MemoryState.EXPIRED, deleted_at__lt=cutoff
    )
    if dry_run:
        report.pruned = len(ids)
        report.purged = purgeable.count()
        return report
    params = {"now": now, "threshold": threshold, "actor": str(actor), "stale": stale}
    params["stale_reason"] = STALE_REASON
    pruned: list[str] = []
    for start in range(0, len(ids), BATCH_SIZE):
        chunk = ids[start : start + BATCH_SIZE]
        with transaction.atomic(), connection.cursor() as cursor:
            if getattr(connection, "is_citus", False):
                pruned += _prune_in_steps(cursor, {**params, "ids": chunk}, project)
            else:
                cursor.execute(_PRUNE_BATCH, {**params, "ids": chunk})
                pruned += [str(row[0]) for row in cursor.fetchall()]
        if progress:
            progress(len(chunk))
    report.pruned, report.pruned_ids = len(pruned), pruned[:REPORTED_IDS]
    if pruned:
        emit(
            project_id=project.pk,
            project_slug=project.slug,
            type="memories_pruned",
            data={"count": len(pruned), "ids": report.pruned_ids, "threshold": threshold},
        )
    report.purged = memories_purge(project=project, before=cutoff)
    MaintenanceState.objects.update_or_create(project=project, defaults={"last_prune_at": now})
    return report


def memories_purge(*, project: Project, before: datetime) -> int:
    """Delete for good the memories pruned before `before`. Memories deleted by people or
    superseded keep their rows and audit trail."""
    total = 0
    while True:
        ids = list(
            Memory.objects.for_project(project)
            .filter(state=MemoryState.EXPIRED, deleted_at__lt=before)
            .values_list("pk", flat=True)[:BATCH_SIZE]
        )
        if not ids:
            return total
        with transaction.atomic():
            total += Memory.objects.filter(pk__in=ids).delete()[1].get("memories.Memory", 0)
