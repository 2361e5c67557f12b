"""The tag registry: every tag in use on the project's live memories and entities, and every
described tag, with counts computed from the rows carrying it (entities.services.tags)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from entities.models import Entity, Tag
from memories.models import Memory
from platformcore.lib.errors import NotFound
from tenants.models import Project


@dataclass(frozen=True)
class TagInfo:
    name: str
    description: str
    memory_count: int
    entity_count: int
    registered: bool  # it has a registry row (a description)


@dataclass(frozen=True)
class TagPage:
    results: list[TagInfo]
    count: int
    limit: int
    offset: int


# One statement: the tags of live memories and of entities (each counted once per row) and
# the registered ones, merged by name; the page is ordered by use.
_LIST_SQL = f"""
WITH used AS (
    SELECT t AS name, count(*) AS memories, 0 AS entities
    FROM {Memory._meta.db_table} m CROSS JOIN LATERAL unnest(m.tags) AS t
    WHERE m.project_id = %(project)s AND m.deleted_at IS NULL AND cardinality(m.tags) > 0
    GROUP BY t
  UNION ALL
    SELECT t, 0, count(*)
    FROM {Entity._meta.db_table} e CROSS JOIN LATERAL unnest(e.tags) AS t
    WHERE e.project_id = %(project)s AND cardinality(e.tags) > 0
    GROUP BY t
  UNION ALL
    SELECT name, 0, 0 FROM {Tag._meta.db_table} WHERE project_id = %(project)s
),
merged AS (
    SELECT name, sum(memories)::int AS memories, sum(entities)::int AS entities
    FROM used
    WHERE %(pattern)s::text IS NULL OR name ILIKE %(pattern)s
    GROUP BY name
)
SELECT m.name, coalesce(r.description, ''), m.memories, m.entities, r.id IS NOT NULL,
       count(*) OVER ()
FROM merged m
LEFT JOIN {Tag._meta.db_table} r ON r.project_id = %(project)s AND r.name = m.name
ORDER BY m.memories + m.entities DESC, m.name
LIMIT %(limit)s OFFSET %(offset)s
"""


def _like(query: str) -> str | None:
    if not query:
        return None
    escaped = "".join("\\" + c if c in "\\%_" else c for c in query)
    return f"%{escaped}%"


def tag_list(*, project: Project, query: str = "", limit: int = 50, offset: int = 0) -> TagPage:
    """The project's tags (those containing `query`, case-insensitively), most used first."""
    params = {"project": project.pk, "pattern": _like(query), "limit": limit, "offset": offset}
    with connection.cursor() as cursor:
        cursor.execute(_LIST_SQL, params)
        rows = cursor.fetchall()
    total = rows[0][5] if rows else _count(project, query) if offset else 0
    return TagPage([TagInfo(*row[:5]) for row in rows], total, limit, offset)


def _count(project: Project, query: str) -> int:
    """The total when the page is past the end (no row carried it)."""
    params = {"project": project.pk, "pattern": _like(query), "limit": 1, "offset": 0}
    with connection.cursor() as cursor:
        cursor.execute(_LIST_SQL, params)
        row = cursor.fetchone()
    return int(row[5]) if row else 0


def tag_get(*, project: Project, name: str) -> TagInfo:
    """One tag: its description and counts (index lookups: `tags @> [name]`)."""
    registered = Tag.objects.filter(project=project, name=name).first()
    memories = Memory.objects.for_project(project).alive().filter(tags__contains=[name]).count()
    entities = Entity.objects.for_project(project).filter(tags__contains=[name]).count()
    if registered is None and not (memories or entities):
        raise NotFound(f"no tag {name!r}")
    description = registered.description if registered is not None else ""
    return TagInfo(name, description, memories, entities, registered is not None)
