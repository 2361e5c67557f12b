"""Superseding: a newer memory replaces an older one without destroying it."""

from __future__ import annotations

from django.db import transaction

from memories.models import LinkType, Memory, MemoryLink
from memories.services.memories import memory_delete
from memoryplatform.lib.actor import Actor
from tenants.models import Project


def link_pair(
    *,
    project: Project,
    source: Memory,
    target: Memory,
    link_type: str,
    inverse: str,
    metadata: dict | None = None,
    strength: float = 1.0,
) -> None:
    """Two directed links (source -type-> target, target -inverse-> source), idempotent."""
    for a, b, kind in ((source, target, link_type), (target, source, inverse)):
        MemoryLink.objects.get_or_create(
            project=project,
            from_memory=a,
            to_memory=b,
            link_type=kind,
            defaults={"metadata": metadata or {}, "strength": strength},
        )


@transaction.atomic
def memory_supersede(
    *, project: Project, old: Memory, new: Memory | None, actor: Actor, reason: str = ""
) -> None:
    """Soft-delete `old` (DELETE history with the reason) and, when a replacement exists, link
    old -superseded_by-> new and new -supersedes-> old. The old row, its history and the links
    stay, so the change can be audited and undone (`restore`)."""
    if new is not None and new.pk != old.pk:
        link_pair(
            project=project,
            source=old,
            target=new,
            link_type=LinkType.SUPERSEDED_BY,
            inverse=LinkType.SUPERSEDES,
        )
    why = reason or (f"superseded by {new.pk}" if new is not None else "superseded")
    memory_delete(project=project, memory_id=old.pk, actor=actor, reason=why)
