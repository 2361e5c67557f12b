"""Wipe one project's data (memories, history, links): the mem0 `reset`, tenant-scoped."""

from __future__ import annotations

from django.db import transaction

from memories.models import Memory, MemoryHistory, MemoryLink
from tenants.models import Project


@transaction.atomic
def project_reset(*, project: Project) -> dict[str, int]:
    """Hard-delete everything the project stored. Keys and the project itself remain."""
    from entities.services.graph import graph_reset

    counts = {
        **graph_reset(project=project),
        "links": MemoryLink.objects.filter(project=project).delete()[0],
        "history": MemoryHistory.objects.filter(project=project).delete()[0],
    }
    counts["memories"] = Memory.objects.filter(project=project).delete()[0]
    return counts
