"""Background jobs of the knowledge graph (django-q2). Jobs take ids and call one service."""

from __future__ import annotations

from entities.services.memory_graph import memory_graph_extract
from platformcore.lib.db_outage import survives_db_outage
from platformcore.lib.project_scope import project_scope
from tenants.models import Project


@survives_db_outage
def extract_memory_graph(project_id: int, memory_id: str) -> int:
    """Extract entities and relations from one memory; returns how many relations it touched."""
    project = Project.objects.get(pk=project_id)
    with project_scope(project.pk):  # row-level security: this project's rows only
        changes = memory_graph_extract(project=project, memory_id=memory_id)
    return len(changes.relations) + len(changes.closed) if changes else 0
