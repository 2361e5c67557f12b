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
    `embedding`, most similar first, at least `min_similarity`.

    The similarity floor applies to the `limit` nearest, not inside the vector index's scan:
    the same answer (the nearest above a floor are the nearest), but an HNSW scan asked for
    rows above a floor that few or none reach (the near-duplicate check before every store)
    keeps walking the graph until its scan limit (20,000 rows), where asked for the nearest
    in scope it stops at the first few."""
    base = queryset if queryset is not None else Memory.objects.all()
    near = (
        base.filter(project=project, deleted_at__isnull=True, embedding__isnull=False)
        .filter(**(scope.as_filter() if scope else {}))
        .exclude(pk__in=exclude_ids or [])
        .annotate(distance=CosineDistance("embedding", embedding))
        .order_by("distance")
    )
    # the rows in the HNSW graph and those whose vector is pending, ranked apart, then together
    in_graph, pending = split_by_graph(near)
    rows = in_graph[:limit].union(pending[:limit], all=True).order_by("distance")[:limit]
    neighbours = [Neighbour(memory=row, similarity=1.0 - row.distance) for row in rows]
    return [n for n in neighbours if n.similarity >= min_similarity]
