"""Reads mem0's API has and the platform's REST API does not: the users, agents, runs and
apps that have memories (mem0's "entities", not the knowledge graph's), with counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Max, Min, QuerySet
from django.db.models.fields.json import KeyTextTransform

from memories.models import Memory
from tenants.models import Project

# mem0's entity type -> the column (or metadata key, for app) naming it
SCOPE_COLUMNS = {"user": "user_id", "agent": "agent_id", "run": "run_id", "app": "app_id"}


@dataclass(frozen=True)
class ScopePage:
    results: list[dict[str, Any]]
    count: int


def _named(project: Project, kind: str) -> QuerySet[Memory]:
    """The project's live memories that have a `kind` name, the name annotated as `name`."""
    column = SCOPE_COLUMNS[kind]
    name = KeyTextTransform(column, "metadata") if kind == "app" else F(column)
    named = Memory.objects.for_project(project).alive().annotate(name=name)
    return named.filter(name__isnull=False).exclude(name="")  # type: ignore[misc]


def memory_scopes(*, project: Project, limit: int, offset: int) -> ScopePage:
    """Users, then agents, runs and apps, each most recently updated first, paged across the
    four lists in SQL (a project may have many thousands of users)."""
    results: list[dict[str, Any]] = []
    total = 0
    for kind in SCOPE_COLUMNS:
        grouped = (
            _named(project, kind)
            .order_by()
            .values("name")  # type: ignore[misc]
            .annotate(total=Count("id"), first=Min("created_at"), last=Max("updated_at"))
        )
        count = grouped.count()
        start = max(offset - total, 0)
        wanted = limit - len(results)
        if wanted > 0 and start < count:
            page = grouped.order_by("-last", "name")[start : start + wanted]  # type: ignore[misc]
            results += [_row(kind, row) for row in page]
        total += count
    return ScopePage(results=results, count=total)


def _row(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": kind,
        "name": row["name"],
        "total_memories": row["total"],
        "created_at": row["first"],
        "updated_at": row["last"],
    }
