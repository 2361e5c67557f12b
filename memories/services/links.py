"""Typed links between memories of one project."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction

from memories.models import LinkType, Memory, MemoryLink
from memories.services.content import check_metadata
from memories.services.memories import CreateResult, MemoryInput, memory_create
from memories.services.pii import scrub_for_storage
from platformcore.lib.actor import Actor
from platformcore.lib.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    check_choice,
    check_unit_interval,
    parse_uuid,
)
from tenants.models import Project


def _live_memory(project: Project, memory_id: UUID | str, field: str) -> Memory:
    pk = parse_uuid(memory_id, what="memory")
    memory = Memory.objects.for_project(project).alive().filter(pk=pk).first()
    if memory is None:
        raise NotFound(f"memory {memory_id} not found", fields={field: ["not found"]})
    return memory


def check_link_type(value: Any) -> str:
    return check_choice("link_type", value, LinkType.values)


ORIGINAL_TYPE_KEY = "original_link_type"


def legacy_link(row: dict[str, Any]) -> dict[str, Any]:
    """A link row from an import with its type in the vocabulary: a type outside it (legacy
    data) becomes `relates_to`, the original kept in `metadata.original_link_type`, as the
    graph and decay plan maps unknown relation types."""
    kind = row.get("link_type")
    if not isinstance(kind, str) or kind in LinkType.values:
        return row
    metadata = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    return {
        **row,
        "link_type": LinkType.RELATES_TO,
        "metadata": {**metadata, ORIGINAL_TYPE_KEY: kind},
    }


@transaction.atomic
def memory_link_create(
    *,
    project: Project,
    from_id: UUID | str,
    to_id: UUID | str,
    link_type: str,
    strength: float = 1.0,
    metadata: dict[str, Any] | None = None,
) -> tuple[MemoryLink, bool]:
    """Link two memories; repeating (from, to, type) updates the link, never duplicates it."""
    link_type = check_link_type(link_type)
    strength = check_unit_interval("strength", strength)
    metadata = check_metadata(metadata or {})
    metadata = scrub_for_storage(project=project, values={"metadata": metadata})["metadata"]
    source = _live_memory(project, from_id, "from_id")
    target = _live_memory(project, to_id, "to_id")
    if source.pk == target.pk:
        raise InvalidInput("a memory cannot link to itself", fields={"to_id": ["same as from_id"]})
    try:
        with transaction.atomic():
            link, created = MemoryLink.objects.update_or_create(
                project=project,
                from_memory=source,
                to_memory=target,
                link_type=link_type,
                defaults={"strength": strength, "metadata": metadata},
            )
    except IntegrityError as exc:
        raise Conflict("this link was created concurrently; retry") from exc
    return link, created


@transaction.atomic
def memory_link_delete(
    *, project: Project, link_id: UUID | str, memory_id: UUID | str | None = None
) -> None:
    links = MemoryLink.objects.filter(project=project, pk=parse_uuid(link_id, what="link"))
    if memory_id is not None:
        pk = parse_uuid(memory_id, what="memory")
        links = links.filter(from_memory_id=pk) | links.filter(to_memory_id=pk)
    deleted, _ = links.delete()
    if not deleted:
        raise NotFound("link not found")


@transaction.atomic
def memory_create_linked(
    *,
    project: Project,
    data: MemoryInput,
    links: Sequence[tuple[UUID | str, str]],
    actor: Actor,
) -> CreateResult:
    """Store a memory and link it to each (target id, link type) of `links`, in one
    transaction: a target that is missing (or of another project) stores nothing."""
    result = memory_create(project=project, data=data, actor=actor)
    for target, link_type in links:
        memory_link_create(
            project=project, from_id=result.memory.pk, to_id=target, link_type=link_type
        )
    return result
