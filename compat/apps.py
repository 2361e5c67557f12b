from django.apps import AppConfig


class CompatConfig(AppConfig):
    name = "compat"
    verbose_name = "Compatibility layers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the SQL-native entity memory server's event stream, at /api/events
        from compat.sqlnative.events import in_sync, render
        from platformcore.lib.event_feeds import register_feed

        register_feed("sqlnative", render=render, caught_up=in_sync)
