"""Superseding: a newer memory replaces an older one without destroying it."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import transaction

from memories.models import LinkType, Memory, MemoryLink
from memories.services.memories import (
    EDITABLE_FIELDS,
    MemoryInput,
    memory_create,
    memory_delete,
    memory_update,
)
from platformcore.lib.actor import Actor
from platformcore.lib.errors import NotFound, parse_uuid
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


SUPERSEDED_SHARE = 0.5  # what is left of an older version's importance and confidence


@transaction.atomic
def memory_revise(
    *, project: Project, memory_id: UUID | str, changes: dict[str, Any], actor: Actor
) -> Memory:
    """A new version of a memory as a memory of its own: the old one with `changes`, linked
    new -supersedes-> old and old -superseded_by-> new. The old one stays findable, its
    importance and confidence halved, so it ranks below the version that replaced it
    (Memento's `amend` with `supersedes`). Changes that leave the content as it was are
    applied in place."""
    old = Memory.objects.for_project(project).alive().filter(pk=parse_uuid(memory_id)).first()
    if old is None:
        raise NotFound("memory not found")
    values = {name: getattr(old, name) for name in EDITABLE_FIELDS} | changes
    data = MemoryInput(
        **values,
        user_id=old.user_id,
        agent_id=old.agent_id,
        run_id=old.run_id,
        episode_id=old.episode_id,
    )
    if data.content == old.content:
        return memory_update(project=project, memory_id=old.pk, changes=changes, actor=actor)
    new = memory_create(project=project, data=data, actor=actor).memory
    if new.pk == old.pk:
        return new
    link_pair(
        project=project,
        source=new,
        target=old,
        link_type=LinkType.SUPERSEDES,
        inverse=LinkType.SUPERSEDED_BY,
    )
    demoted = {
        "importance": round(old.importance * SUPERSEDED_SHARE, 6),
        "confidence": round(old.confidence * SUPERSEDED_SHARE, 6),
    }
    memory_update(project=project, memory_id=old.pk, changes=demoted, actor=actor)
    return new


@transaction.atomic
def memory_update_superseding(
    *,
    project: Project,
    memory_id: UUID | str,
    changes: dict[str, Any],
    supersedes: list[UUID | str],
    actor: Actor,
) -> Memory:
    """Amend a memory and retire the older memories it replaces (`memory_supersede`: soft-
    deleted, linked both ways), in one transaction: an unknown id changes nothing."""
    memory = (
        memory_update(project=project, memory_id=memory_id, changes=changes, actor=actor)
        if changes
        else Memory.objects.for_project(project).alive().filter(pk=parse_uuid(memory_id)).first()
    )
    if memory is None:
        raise NotFound("memory not found")
    for old_id in supersedes:
        old = Memory.objects.for_project(project).alive().filter(pk=parse_uuid(old_id)).first()
        if old is None:
            raise NotFound(f"memory {old_id} not found", fields={"supersedes": [str(old_id)]})
        memory_supersede(project=project, old=old, new=memory, actor=actor)
    return memory
