"""Background jobs of the maintenance that spans apps (django-q2; scheduled in
memories.tasks.SCHEDULES)."""

from __future__ import annotations

from typing import Any

from maintenance.embeddings import embeddings_refresh
from platformcore.lib.db_outage import survives_db_outage
from platformcore.lib.project_scope import all_projects


@survives_db_outage
def refresh_embeddings() -> dict[str, Any]:
    """Fill missing vectors everywhere; re-embed everything once the model changed."""
    with all_projects("job: refresh embeddings"):
        return embeddings_refresh().as_dict()
