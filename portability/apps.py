from __future__ import annotations

from django.apps import AppConfig


class PortabilityConfig(AppConfig):
    name = "portability"
    label = "portability"
    verbose_name = "Export, import and backups"
    default_auto_field = "django.db.models.BigAutoField"
