from django.apps import AppConfig


class MemoryPlatformConfig(AppConfig):
    name = "memoryplatform"
    verbose_name = "Memory Platform"
