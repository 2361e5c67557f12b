"""Nearest neighbours of a vector among one project's live memories (pgvector cosine)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from django.db.models import QuerySet
from pgvector.django import CosineDistance

from memories.memory_scope import Scope
from memories.models import Memory
from memories.selectors.pending_vectors import split_by_graph
from tenants.models import Project


@dataclass(frozen=True)
class Neighbour:
    memory: Memory
    similarity: float  # cosine similarity in [-1, 1]; 1 = same direction


def memories_similar_to(
    *,
    project: Project,
    embedding: list[float],
    scope: Scope | None = None,
    limit: int = 5,
    min_similarity: float = 0.0,
    exclude_ids: list[UUID] | None = None,
    queryset: QuerySet[Memory] | None = None,
) -> list[Neighbour]:
    """Live memories of `project` (within `scope`, all given fields matching) closest to
    `embedding`, most similar first, at least `min_similarity`."""
    base = queryset if queryset is not None else Memory.objects.all()
    near = (
        base.filter(project=project, deleted_at__isnull=True, embedding__isnull=False)
        .filter(**(scope.as_filter() if scope else {}))
        .exclude(pk__in=exclude_ids or [])
        .annotate(distance=CosineDistance("embedding", embedding))
        .filter(distance__lte=1.0 - min_similarity)
        .order_by("distance")
    )
    # the rows in the HNSW graph and those whose vector is pending, ranked apart, then together
    in_graph, pending = split_by_graph(near)
    rows = in_graph[:limit].union(pending[:limit], all=True).order_by("distance")[:limit]
    return [Neighbour(memory=row, similarity=1.0 - row.distance) for row in rows]
