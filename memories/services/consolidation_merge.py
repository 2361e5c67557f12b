"""Merging consolidation clusters set-wise: a batch of clusters costs a dozen statements, not
a dozen per cluster (a first run over a large store merges thousands of clusters).

Per cluster the result is what consolidation promises: the primary gets the union of tags, the
merged metadata (its own values win), the maximum confidence and importance, the summed access
count, pinned if any was, `version + 1` and a MERGE history row per absorbed memory; links and
entity associations of the absorbed memories move to the primary; absorbed memories are
soft-deleted (DELETE history, "consolidated into …") with `superseded_by` / `supersedes`
links. Rows are locked (in id order) and re-read first: a memory deleted meanwhile is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.models import Q
from django.utils import timezone

from memories.models import HistoryEvent, LinkType, Memory, MemoryHistory, MemoryLink
from memories.services.write_kernel import emit_memory_events, history_entry
from platformcore.lib.actor import Actor
from platformcore.lib.bulk import update_rows
from platformcore.lib.hooks import run_hooks
from tenants.models import Project

BATCH_CLUSTERS = 500
_PRIMARY_FIELDS = [
    "metadata",
    "tags",
    "confidence",
    "importance",
    "access_count",
    "pinned",
    "version",
    "updated_at",
]

Cluster = tuple[Any, list[tuple[Any, float]]]  # memories, or anything with their `pk`


@dataclass
class Moved:
    links: int = 0
    entities: int = 0


def clusters_absorb(
    *,
    project: Project,
    clusters: list[Cluster],
    actor: Actor,
    progress: Callable[[int, int], None] | None = None,
) -> Moved:
    """Merge every cluster into its primary, `BATCH_CLUSTERS` clusters at a time."""
    moved = Moved()
    for start in range(0, len(clusters), BATCH_CLUSTERS):
        batch = _locked(clusters[start : start + BATCH_CLUSTERS])
        links, entities = _absorb_batch(project, batch, actor)
        moved.links += links
        moved.entities += entities
        if progress:
            progress(min(start + BATCH_CLUSTERS, len(clusters)), len(clusters))
    return moved


def _locked(clusters: list[Cluster]) -> list[Cluster]:
    """The clusters with their rows locked and fresh; gone rows (and empty clusters) dropped."""
    ids = [m.pk for primary, members in clusters for m in (primary, *(m for m, _ in members))]
    rows = Memory.objects.filter(pk__in=ids, deleted_at__isnull=True).defer(
        "search_vector", "embedding"
    )
    fresh = {m.pk: m for m in rows.order_by("pk").select_for_update()}
    kept = []
    for primary, members in clusters:
        alive = [(fresh[m.pk], s) for m, s in members if m.pk in fresh]
        if primary.pk in fresh and alive:
            kept.append((fresh[primary.pk], alive))
    return kept


def _absorb_batch(project: Project, clusters: list[Cluster], actor: Actor) -> tuple[int, int]:

    into = {m.pk: primary.pk for primary, members in clusters for m, _ in members}
    history = [row for primary, members in clusters for row in _merge(primary, members, actor)]
    update_rows([primary for primary, _ in clusters], _PRIMARY_FIELDS)
    links = _move_links(project, into)
    entities = reassign_entities_batch(project=project, into=into)
    _supersede(project, clusters, actor, history)
    MemoryHistory.objects.bulk_create(history)
    events: list[tuple[Memory, Any, dict[str, Any]]] = []
    for primary, members in clusters:
        events.append((primary, "memories_merged", {"absorbed": [str(m.pk) for m, _ in members]}))
        events += [(member, "memory_deleted", {}) for member, _ in members]
    emit_memory_events(project, events)
    return links, entities


def _merge(primary: Memory, members: list[tuple[Memory, float]], actor: Actor) -> list[Any]:
    """Fold the members into `primary` (in memory) and return its MERGE history rows."""

    absorbed = [member for member, _ in members]
    before = {
        "confidence": primary.confidence,
        "tags": list(primary.tags),
        "metadata": dict(primary.metadata),
        "version": primary.version,
    }
    metadata: dict[str, Any] = {}
    for other in sorted(absorbed, key=lambda m: m.created_at):
        metadata.update(other.metadata)
    primary.metadata = {**metadata, **primary.metadata}
    primary.tags = list(dict.fromkeys([*primary.tags, *(t for m in absorbed for t in m.tags)]))
    primary.confidence = max([primary.confidence, *(m.confidence for m in absorbed)])
    primary.importance = max([primary.importance, *(m.importance for m in absorbed)])
    primary.access_count += sum(m.access_count for m in absorbed)
    primary.pinned = primary.pinned or any(m.pinned for m in absorbed)
    primary.version += 1
    primary.updated_at = timezone.now()
    return [
        history_entry(
            primary,
            HistoryEvent.MERGE,
            actor,
            old={"content": primary.content, **before} if index == 0 else {},
            new={
                "content": other.content,
                "absorbed_id": str(other.pk),
                "similarity": round(similarity, 4),
                "version": primary.version,
                "reason": "consolidation",
            },
        )
        for index, (other, similarity) in enumerate(members)
    ]


def _move_links(project: Project, into: dict[UUID, UUID]) -> int:
    """Re-point the absorbed memories' links at their primaries (no self-links, no
    duplicates); returns how many links the primaries gained."""
    ids = list(into)
    old = list(
        MemoryLink.objects.filter(project=project).filter(
            Q(from_memory_id__in=ids) | Q(to_memory_id__in=ids)
        )
    )
    wanted: dict[tuple[UUID, UUID, str], MemoryLink] = {}
    for link in old:
        source = into.get(link.from_memory_id, link.from_memory_id)
        target = into.get(link.to_memory_id, link.to_memory_id)
        if source != target:
            wanted.setdefault((source, target, link.link_type), link)
    MemoryLink.objects.filter(pk__in=[link.pk for link in old]).delete()
    existing = _existing_links(project, list(wanted))
    new = [
        MemoryLink(
            project=project,
            from_memory_id=source,
            to_memory_id=target,
            link_type=kind,
            strength=link.strength,
            metadata=link.metadata,
        )
        for (source, target, kind), link in wanted.items()
        if (source, target, kind) not in existing
    ]
    MemoryLink.objects.bulk_create(new)
    return len(new)


def _existing_links(
    project: Project, keys: list[tuple[UUID, UUID, str]]
) -> set[tuple[UUID, UUID, str]]:
    if not keys:
        return set()
    sources = {source for source, _, _ in keys}
    rows = MemoryLink.objects.filter(project=project, from_memory_id__in=sources)
    found = set(rows.values_list("from_memory_id", "to_memory_id", "link_type"))
    return found & set(keys)


def reassign_entities(*, project: Project, primary_id: UUID, absorbed_ids: list[UUID]) -> int:
    """The primary takes every entity of the absorbed memories (the `memories_merged` hook);
    returns the links moved."""
    return reassign_entities_batch(project=project, into=dict.fromkeys(absorbed_ids, primary_id))


def reassign_entities_batch(*, project: Project, into: dict[UUID, UUID]) -> int:
    """`reassign_entities` for many clusters at once: `into` maps absorbed → primary."""
    if not into:
        return 0
    return sum(run_hooks("memories_merged", project=project, into=into) or [0])


def _supersede(project: Project, clusters: list[Cluster], actor: Actor, history: list[Any]) -> None:
    """Soft-delete the absorbed memories, linked to their primaries both ways; their DELETE
    history rows join `history`."""

    now = timezone.now()
    absorbed = [(primary, member) for primary, members in clusters for member, _ in members]
    Memory.objects.filter(pk__in=[m.pk for _, m in absorbed]).update(deleted_at=now, updated_at=now)
    links = []
    for primary, member in absorbed:
        for source, target, kind in (
            (member, primary, LinkType.SUPERSEDED_BY),
            (primary, member, LinkType.SUPERSEDES),
        ):
            links.append(
                MemoryLink(project=project, from_memory=source, to_memory=target, link_type=kind)
            )
        reason = {"reason": f"consolidated into {primary.pk}"}
        history.append(
            history_entry(
                member, HistoryEvent.DELETE, actor, old={"content": member.content}, new=reason
            )
        )
    MemoryLink.objects.bulk_create(links, ignore_conflicts=True)
