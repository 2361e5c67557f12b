"""Background jobs of the maintenance that spans apps (django-q2; scheduled in
memories.tasks.SCHEDULES)."""

from __future__ import annotations

from typing import Any

from memoryplatform.lib.db_outage import survives_db_outage
from memoryplatform.lib.project_scope import all_projects


@survives_db_outage
def refresh_embeddings() -> dict[str, Any]:
    """Fill missing vectors everywhere; re-embed everything once the model changed."""
    from memoryplatform.maintenance.embeddings import embeddings_refresh

    with all_projects("job: refresh embeddings"):
        return embeddings_refresh().as_dict()
