"""Wipe one project's data (memories, history, links): the mem0 `reset`, tenant-scoped."""

from __future__ import annotations

from django.db import transaction

from memories.models import Episode, Memory, MemoryHistory, MemoryLink
from platformcore.lib.hooks import run_hooks
from tenants.models import Project


@transaction.atomic
def project_reset(*, project: Project) -> dict[str, int]:
    """Hard-delete everything the project stored (the `project_reset` hooks wipe what the
    apps above kept of it: the graph). Keys and the project itself remain."""
    counts: dict[str, int] = {}
    for wiped in run_hooks("project_reset", project=project):
        counts.update(wiped or {})
    counts |= {
        "links": MemoryLink.objects.filter(project=project).delete()[0],
        "history": MemoryHistory.objects.filter(project=project).delete()[0],
    }
    counts["memories"] = Memory.objects.filter(project=project).delete()[0]
    counts["episodes"] = Episode.objects.filter(project=project).delete()[0]
    return counts
