from __future__ import annotations

from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate


class MaintenanceConfig(AppConfig):
    name = "maintenance"
    verbose_name = "Store maintenance"

    def ready(self) -> None:
        # imported here: these modules import models, not loaded yet when Django imports
        # this module
        from maintenance.vector_schema import fit_vector_columns
        from memories.tasks import SCHEDULES

        # a fresh store's vector columns take the configured embedding model's size, once per
        # `migrate` (this app has no models, so the signal is the foundation's)
        post_migrate.connect(
            fit_vector_columns,
            sender=apps.get_app_config("platformcore"),
            dispatch_uid="maintenance.vectors",
        )
        # missing vectors of memories, entities and chunks; all of them once the model changed
        SCHEDULES["embeddings-refresh"] = ("maintenance.tasks.refresh_embeddings", "H")
