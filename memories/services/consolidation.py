"""Consolidation: clusters of near-identical memories become one.

Candidate pairs come from pgvector distance queries run inside PostgreSQL, never an all-pairs
loop in Python (`consolidation_pairs`: exact pairs within small scopes, project-filtered HNSW
probes in large ones). Clusters are stars: the
highest-confidence memory (older on ties) is the primary and absorbs the unclaimed memories of
the same scope at least `threshold` (0.85) similar to it, except those with contradiction
cues, which become contradiction reviews instead. The primary gets the union of tags, merged
metadata, the maximum confidence and importance, the summed access count, version + 1 and a
MERGE history row per absorbed memory; links and entity associations move to the primary;
absorbed memories are soft-deleted with a `superseded_by` link. `dry_run` computes the same
report and changes nothing.

Triggers: the API/command (manual; full unless given `since`), every `consolidation_interval`
(50) inserts of a project (a job enqueued after commit) and the daily schedule (both
incremental: memories changed since the project's last run, `consolidation_since`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from django.db import connection, transaction
from django.utils import timezone

from memories.models import (
    MaintenanceState,
    Memory,
)
from memories.services.consolidation_merge import clusters_absorb
from memories.services.consolidation_merge import reassign_entities as reassign_entities
from memories.services.consolidation_pairs import candidate_pairs
from memories.services.contradictions import contradiction_cues, contradiction_record, judge
from memories.services.tuning import tuning
from platformcore.events import emit
from platformcore.lib.actor import Actor
from platformcore.lib.after_response import after_commit_and_response
from platformcore.lib.errors import InvalidInput
from platformcore.lib.result_cache import quiet_writes
from tenants.models import Project

logger = logging.getLogger(__name__)

REPORTED_CLUSTERS = 100
SINCE_OVERLAP = timedelta(minutes=10)


@dataclass
class ClusterReport:
    primary_id: str
    primary_content: str
    absorbed: list[dict[str, Any]]


@dataclass
class ConsolidationReport:
    dry_run: bool
    threshold: float
    since: str | None = None  # incremental: memories changed since then were scanned
    memories_scanned: int = 0
    scopes_exact: int = 0  # scopes compared pair by pair
    scopes_probed: int = 0  # scopes searched with HNSW probes
    clusters_found: int = 0
    memories_merged: int = 0
    memories_deleted: int = 0
    links_reassigned: int = 0
    entities_reassigned: int = 0
    contradictions_found: int = 0
    clusters: list[ClusterReport] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_threshold(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise InvalidInput(
            "similarity_threshold must be a number in (0, 1]",
            fields={"similarity_threshold": ["a number in (0, 1]"]},
        )
    return float(value)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What ranks and compares a memory of a candidate pair; the clusters' rows are read
    again, whole and locked, before they merge (consolidation_merge)."""

    pk: UUID
    content: str
    confidence: float
    created_at: datetime


# Tuples, not model instances (75k of them for 4,000 new memories in the scale benchmark's
# store: with their vectors, parsing 384 floats a row was a fifth of the run) and the ids as
# one array parameter, not one placeholder each.
_CANDIDATES_SQL = f"""
SELECT id, content, confidence, created_at FROM {Memory._meta.db_table}
WHERE id = ANY(%s) AND deleted_at IS NULL
"""


def _candidates(ids: set[UUID]) -> dict[UUID, Candidate]:
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_CANDIDATES_SQL, [list(ids)])
        return {row[0]: Candidate(*row) for row in cursor.fetchall()}


def _stars(
    pairs: list[tuple[UUID, UUID, float]], memories: dict[UUID, Candidate], threshold: float
) -> tuple[
    list[tuple[Candidate, list[tuple[Candidate, float]]]],
    list[tuple[Candidate, Candidate, float]],
]:
    """Star clusters around the most confident memories, and contradiction candidates."""
    adjacency: dict[UUID, dict[UUID, float]] = defaultdict(dict)
    for a, b, similarity in pairs:
        adjacency[a][b] = max(similarity, adjacency[a].get(b, 0.0))
        adjacency[b][a] = adjacency[a][b]
    order = sorted(memories.values(), key=lambda m: (-m.confidence, m.created_at, str(m.pk)))
    claimed: set[UUID] = set()
    clusters, conflicts = [], []
    seen_conflicts: set[frozenset[UUID]] = set()
    for primary in order:
        if primary.pk in claimed:
            continue
        members = []
        for other_id, similarity in sorted(adjacency[primary.pk].items(), key=lambda x: -x[1]):
            other = memories.get(other_id)
            if other is None or other_id in claimed:
                continue
            if contradiction_cues(primary.content, other.content):
                pair = frozenset((primary.pk, other_id))
                if pair not in seen_conflicts:
                    seen_conflicts.add(pair)
                    conflicts.append((primary, other, similarity))
            elif similarity >= threshold:
                members.append((other, similarity))
        if members:
            claimed.add(primary.pk)
            claimed.update(member.pk for member, _ in members)
            clusters.append((primary, members))
    return clusters, conflicts


def memories_consolidate(
    *,
    project: Project,
    actor: Actor,
    similarity_threshold: float | None = None,
    dry_run: bool = False,
    since: datetime | Literal["last"] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ConsolidationReport:
    """Find and (unless `dry_run`) merge clusters; see the module docstring. With `since`,
    only memories changed at or after it look for partners (in their whole scope); "last"
    means since the project's last run (`consolidation_since`; a full run if there was none)."""
    if since == "last":
        since = consolidation_since(project=project)
    threshold = _check_threshold(
        similarity_threshold
        if similarity_threshold is not None
        else tuning(project, "consolidation_threshold")
    )
    floor = min(threshold, float(tuning(project, "contradiction_min_similarity")))
    report = ConsolidationReport(
        dry_run=dry_run, threshold=threshold, since=since.isoformat() if since else None
    )
    started = timezone.now()
    with transaction.atomic():
        search = candidate_pairs(project=project, min_similarity=floor, since=since)
        pairs = search.pairs
        ids = {pk for a, b, _ in pairs for pk in (a, b)}
        memories = _candidates(ids)
        report.memories_scanned = search.seekers
        report.scopes_exact, report.scopes_probed = search.exact_scopes, search.probed_scopes
        clusters, conflicts = _stars(pairs, memories, threshold)
        report.clusters_found = len(clusters)
        report.memories_merged = sum(len(members) for _, members in clusters)
        report.clusters = [
            ClusterReport(
                primary_id=str(primary.pk),
                primary_content=primary.content,
                absorbed=[
                    {"id": str(m.pk), "content": m.content, "similarity": round(s, 4)}
                    for m, s in members
                ],
            )
            for primary, members in clusters[:REPORTED_CLUSTERS]
        ]
        if dry_run:
            report.contradictions_found = len(conflicts)
            transaction.set_rollback(True)
            return report
        moved = clusters_absorb(project=project, clusters=clusters, actor=actor, progress=progress)
        report.links_reassigned, report.entities_reassigned = moved.links, moved.entities
        report.memories_deleted = report.memories_merged
        rows = Memory.objects.in_bulk({m.pk for a, b, _ in conflicts for m in (a, b)})
        for a, b, similarity in conflicts:
            older, newer = sorted((rows[a.pk], rows[b.pk]), key=lambda m: (m.created_at, str(m.pk)))
            verdict = judge(older.content, newer.content)
            if verdict.contradicts and contradiction_record(
                project=project, older=older, newer=newer, similarity=similarity, verdict=verdict
            ):
                report.contradictions_found += 1
        _mark_done(project, started)
        emit(
            project_id=project.pk,
            project_slug=project.slug,
            type="consolidation_complete",
            data={
                "clusters_found": report.clusters_found,
                "memories_merged": report.memories_merged,
                "contradictions_found": report.contradictions_found,
            },
        )
    return report


def _mark_done(project: Project, started: datetime) -> None:
    """Record when this run *started*: what was written while it ran is the next run's."""
    MaintenanceState.objects.update_or_create(
        project=project,
        defaults={"last_consolidation_at": started, "inserts_since_consolidation": 0},
    )


def consolidation_since(*, project: Project) -> datetime | None:
    """Where an incremental run starts: the last run's start, less `SINCE_OVERLAP` (a write
    that set `updated_at` before then may have committed after that run read the table).
    None (a full run) when the project was never consolidated."""
    state = MaintenanceState.objects.filter(project=project).first()
    if state is None or state.last_consolidation_at is None:
        return None
    return state.last_consolidation_at - SINCE_OVERLAP


# --- trigger: every N inserts ------------------------------------------------------------

_COUNT_SQL = """
INSERT INTO memories_maintenancestate (project_id, inserts_since_consolidation)
VALUES (%(project)s, %(count)s)
ON CONFLICT (project_id) DO UPDATE
SET inserts_since_consolidation =
    memories_maintenancestate.inserts_since_consolidation + %(count)s
RETURNING inserts_since_consolidation
"""


def count_insert(*, project: Project, count: int = 1) -> None:
    """Count `count` inserts after the write commits and its answer is sent (a statement of
    its own, so writers never queue on the counter row) and enqueue consolidation every
    `interval` inserts."""
    interval = int(tuning(project, "consolidation_interval") or 0)
    if interval <= 0:
        return
    project_id = project.pk
    after_commit_and_response(lambda: _count_committed_insert(project_id, interval, count))


_TAKE_SQL = """
UPDATE memories_maintenancestate SET inserts_since_consolidation =
    inserts_since_consolidation - %(taken)s
WHERE project_id = %(project)s AND inserts_since_consolidation >= %(taken)s
RETURNING 1
"""


def _count_committed_insert(project_id: int, interval: int, count: int) -> None:
    # the counter is no search answer: its writes leave the search cache as it is
    with quiet_writes(), connection.cursor() as cursor:
        cursor.execute(_COUNT_SQL, {"project": project_id, "count": count})
        (total,) = cursor.fetchone()
        if total < interval:
            return
        # one consolidation run covers however many intervals a bulk write crossed; of two
        # writers crossing one interval at once, the one whose UPDATE takes them enqueues
        taken = total - total % interval
        cursor.execute(_TAKE_SQL, {"project": project_id, "taken": taken})
        if not cursor.fetchall():
            return
    # imported here: memories.tasks imports this module (cycle)
    from memories.tasks import enqueue

    enqueue("memories.tasks.consolidate_project", project_id)
