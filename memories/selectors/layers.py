"""Layer-aware ranking: the caller's run's recent short-term memories a little higher.

`session_boost` is a hybrid boost (listed in `HYBRID_BOOSTS`, search/dispatch.py): when a
search names the caller's run (`session_id`, else its `run_id` filter), each hit that is a
short-term memory of that run gains up to MEMORY_SHORT_TERM_SESSION_BOOST (0.1), the full
amount when just stored, nothing once it is as old as the short-term time to live (24 hours
where short-term memories never expire). Session context orders its working memory the same
way (short-term first, newest first).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memories.models import Memory, MemoryLayer
from memories.selectors.search_types import SearchHit, SearchQuery
from memories.services.layers import short_term_ttl
from tenants.models import Project

FRESHNESS_WITHOUT_TTL = timedelta(hours=24)  # the boost's window where short-term never expires


_SHORT_TERM_HITS_SQL = f"""
SELECT m.id, m.created_at FROM unnest(%s::uuid[]) AS h(id)
JOIN {Memory._meta.db_table} m ON m.id = h.id
WHERE m.project_id = %s AND m.run_id = %s AND m.layer = '{MemoryLayer.SHORT_TERM.value}'
"""


def session_run(query: SearchQuery) -> str | None:
    run = query.options.get("session_id") or query.filters.run_id
    return run if isinstance(run, str) and run else None


def session_boost(
    *, project: Project, query: SearchQuery, hits: list[SearchHit], prepared: Any = None
) -> dict[Any, float]:
    """{memory id: boost} of the hits that are recent short-term memories of the run."""
    run = session_run(query)
    weight = float(settings.MEMORY_SHORT_TERM_SESSION_BOOST)
    if run is None or not hits or weight == 0:
        return {}
    now, ttl = timezone.now(), (short_term_ttl(project) or FRESHNESS_WITHOUT_TTL).total_seconds()
    with connection.cursor() as cursor:  # written out: the ORM's IN list of ~100 ids cost
        cursor.execute(_SHORT_TERM_HITS_SQL, [[hit.memory.pk for hit in hits], project.pk, run])
        rows = cursor.fetchall()  # more to compile and send than the statement to run
    boosts = {}
    for pk, created_at in rows:
        freshness = 1.0 - (now - created_at).total_seconds() / ttl
        if freshness > 0:
            boosts[pk] = weight * min(freshness, 1.0)
    return boosts


session_boost.boost_name = "session"  # type: ignore[attr-defined]
