"""Reads composed for MCP results: linked neighbours of search hits (Memento `includeLinks`)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db.models import Q

from memories.models import MemoryLink
from memories.selectors.memories import memory_queryset
from tenants.models import Project


def linked_neighbours(
    *,
    project: Project,
    memory_ids: list[UUID],
    link_types: list[str] | None = None,
    limit: int = 20,
) -> list[tuple[MemoryLink, Any]]:
    """(link, other memory) for live memories one link away from `memory_ids` and not among
    them, strongest links first."""
    links = (
        MemoryLink.objects.filter(project=project)
        .filter(Q(from_memory_id__in=memory_ids) | Q(to_memory_id__in=memory_ids))
        .order_by("-strength", "created_at")
    )
    if link_types:
        links = links.filter(link_type__in=link_types)
    seen = set(memory_ids)
    wanted: list[tuple[MemoryLink, UUID]] = []
    for link in links[: limit * 4]:
        other = link.to_memory_id if link.from_memory_id in seen else link.from_memory_id
        if other not in seen:
            seen.add(other)
            wanted.append((link, other))
    found = {
        m.pk: m for m in memory_queryset(project=project).filter(pk__in=[o for _, o in wanted])
    }
    return [(link, found[other]) for link, other in wanted if other in found][:limit]
