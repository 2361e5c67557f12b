"""Episode reads: one episode, a filtered page, its memories in order, a run's open one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.models import Count, Q, QuerySet

from memories.models import Episode, Memory
from memories.selectors.memories import memory_queryset
from platformcore.lib.errors import NotFound, parse_uuid
from tenants.models import Project


def episode_get(*, project: Project, episode_id: UUID | str) -> Episode:
    pk = parse_uuid(episode_id, what="episode")
    episode = _with_counts(Episode.objects.filter(project=project, pk=pk)).first()
    if episode is None:
        raise NotFound("episode not found")
    return episode


def _with_counts(queryset: QuerySet[Episode]) -> QuerySet[Episode]:
    live = Q(memories__deleted_at__isnull=True, memories__isnull=False)
    return queryset.annotate(memory_count=Count("memories", filter=live))


@dataclass(frozen=True)
class EpisodeFilters:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    open: bool | None = None  # True: still open; False: closed; None: both

    def as_q(self) -> Q:
        q = Q(**{n: v for n in ("user_id", "agent_id", "run_id") if (v := getattr(self, n))})
        if self.open is not None:
            q &= Q(ended_at__isnull=self.open)
        return q


@dataclass(frozen=True)
class EpisodePage:
    results: list[Episode]
    count: int
    limit: int
    offset: int


def episode_list(
    *, project: Project, filters: EpisodeFilters, limit: int = 20, offset: int = 0
) -> EpisodePage:
    """The project's episodes matching `filters`, the latest started first."""
    queryset = Episode.objects.filter(project=project).filter(filters.as_q())
    results = list(_with_counts(queryset).order_by("-started_at", "-id")[offset : offset + limit])
    return EpisodePage(results=results, count=queryset.count(), limit=limit, offset=offset)


def episode_memories(*, project: Project, episode: Episode, limit: int = 500) -> list[Memory]:
    """The episode's live memories in the order they were stored."""
    queryset = memory_queryset(project=project).filter(episode=episode)
    return list(queryset.order_by("created_at", "id")[:limit])


def episode_open_for_run(*, project: Project, run_id: str | None, **scope: Any) -> Episode | None:
    """The run's current episode: its open one (there is at most one), if any. Given
    user_id/agent_id must match the episode's when it has them."""
    if not run_id:
        return None
    episode = Episode.objects.filter(project=project, run_id=run_id, ended_at__isnull=True).first()
    if episode is None:
        return None
    for name, value in scope.items():
        mine = getattr(episode, name)
        if value and mine and value != mine:
            return None
    return episode
