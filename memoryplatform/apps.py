from __future__ import annotations

from django.apps import AppConfig

from memoryplatform import checks  # noqa: F401 (the system checks register on import)


class MemoryPlatformConfig(AppConfig):
    """The composition root: settings, URLs, ASGI, the live feed's endpoints, health, and the
    migrations and commands that span the apps."""

    name = "memoryplatform"
    verbose_name = "Memory Platform"
