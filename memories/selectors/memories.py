"""Memory reads: one memory, a filtered page, history, links."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet

from memories.models import Memory, MemoryHistory, MemoryLink
from memories.selectors.filters import MemoryFilters, apply_filters, effective_confidence
from memoryplatform.lib.errors import NotFound, parse_uuid
from tenants.models import Project


def memory_queryset(*, project: Project) -> QuerySet[Memory]:
    """The one place reads start from: the caller's project, live memories only."""
    return (
        Memory.objects.for_project(project)
        .alive()
        .defer("embedding", "search_vector")
        .annotate(has_vector=ExpressionWrapper(Q(embedding__isnull=False), BooleanField()))
    )


def memory_get(*, project: Project, memory_id: UUID | str) -> Memory:
    pk = parse_uuid(memory_id, what="memory")
    memory = (
        memory_queryset(project=project)
        .annotate(effective_confidence=effective_confidence())
        .filter(pk=pk)
        .first()
    )
    if memory is None:
        raise NotFound("memory not found")
    return memory


@dataclass(frozen=True)
class Page:
    results: list[Memory]
    count: int
    limit: int
    offset: int


def memory_list(*, project: Project, filters: MemoryFilters, limit: int, offset: int) -> Page:
    queryset = apply_filters(memory_queryset(project=project), filters, project=project).order_by(
        "-created_at", "-id"
    )
    return Page(
        results=list(queryset[offset : offset + limit]),
        count=queryset.count(),
        limit=limit,
        offset=offset,
    )


def memory_history(*, project: Project, memory_id: UUID | str) -> list[MemoryHistory]:
    pk = parse_uuid(memory_id, what="memory")
    # The audit trail outlives a soft delete: it is how one learns what was deleted and by whom.
    if not Memory.objects.for_project(project).filter(pk=pk).exists():
        raise NotFound("memory not found")
    return list(
        MemoryHistory.objects.filter(project=project, memory_id=pk).order_by("created_at", "id")
    )


def memory_links(*, project: Project, memory_id: UUID | str) -> list[MemoryLink]:
    """Links in and out of a live memory whose other end is live too."""
    memory = memory_get(project=project, memory_id=memory_id)
    return list(
        MemoryLink.objects.filter(project=project)
        .filter(Q(from_memory=memory) | Q(to_memory=memory))
        .filter(from_memory__deleted_at__isnull=True, to_memory__deleted_at__isnull=True)
        .order_by("created_at", "id")
    )
