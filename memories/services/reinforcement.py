"""Reinforcement: a memory that is returned (by search or a GET) gets stronger.

Seed 000 §4.3: access_count + 1, last_accessed_at = now, confidence + step capped at 1.0.
One bulk UPDATE per request, run by the entry point after it has built its response, so it
never slows the read that caused it. Plain history is not written: reads are not changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from django.conf import settings
from django.db.models import F, Value
from django.db.models.functions import Least, Now

from memories.models import Memory
from tenants.models import Project


def memories_reinforce(*, project: Project, memory_ids: Iterable[UUID | str]) -> int:
    """Reinforce the project's live memories among `memory_ids`; returns how many."""
    ids = list(dict.fromkeys(memory_ids))
    if not ids:
        return 0
    return (
        Memory.objects.for_project(project)
        .alive()
        .filter(pk__in=ids)
        .update(
            access_count=F("access_count") + 1,
            last_accessed_at=Now(),
            confidence=Least(F("confidence") + Value(settings.MEMORY_REINFORCEMENT_STEP), 1.0),
        )
    )
