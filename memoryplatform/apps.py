from __future__ import annotations

from django.apps import AppConfig


class MemoryPlatformConfig(AppConfig):
    name = "memoryplatform"
    verbose_name = "Memory Platform"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate
        from django_q.signals import post_execute

        from memories.tasks import SCHEDULES
        from memoryplatform import checks, metrics  # noqa: F401 (checks: registered on import)
        from memoryplatform.db.rls import after_migrate
        from memoryplatform.maintenance.vector_schema import fit_vector_columns

        # every finished background job is timed, in the process that records its result
        post_execute.connect(metrics.job_finished, dispatch_uid="memoryplatform.job_metrics")
        # row-level security on every tenant table, new ones included
        post_migrate.connect(after_migrate, dispatch_uid="memoryplatform.rls")
        # a fresh store's vector columns take the configured embedding model's size
        post_migrate.connect(fit_vector_columns, sender=self, dispatch_uid="memoryplatform.vectors")
        # missing vectors of memories, entities and chunks; all of them once the model changed
        # (a job of the composition root: it spans the apps)
        SCHEDULES["embeddings-refresh"] = (
            "memoryplatform.maintenance.tasks.refresh_embeddings",
            "H",
        )
