from __future__ import annotations

from django.apps import AppConfig


class MemoryPlatformConfig(AppConfig):
    """The composition root: settings, URLs, ASGI, the live feed's endpoints, health, and the
    migrations and commands that span the apps."""

    name = "memoryplatform"
    verbose_name = "Memory Platform"

    def ready(self) -> None:
        from memoryplatform import checks  # noqa: F401 (registered on import)
