from django.apps import AppConfig

from platformcore.lib.event_feeds import register_feed


class CompatConfig(AppConfig):
    name = "compat"
    verbose_name = "Compatibility layers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the SQL-native entity memory server's event stream, at /api/events; imported here:
        # its module imports models, not loaded yet when Django imports this module
        from compat.sqlnative.events import in_sync, render

        register_feed("sqlnative", render=render, caught_up=in_sync)
