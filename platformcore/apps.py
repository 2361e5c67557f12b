from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate

from platformcore import metrics
from platformcore.db.rls import after_migrate


class PlatformCoreConfig(AppConfig):
    name = "platformcore"
    verbose_name = "Platform foundation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # imported here: django_q.signals imports django-q2's models, not loaded yet when
        # Django imports this module
        from django_q.signals import post_execute

        # every finished background job is timed, in the process that records its result
        post_execute.connect(metrics.job_finished, dispatch_uid="platformcore.job_metrics")
        # row-level security on every tenant table, new ones included
        post_migrate.connect(after_migrate, dispatch_uid="platformcore.rls")
