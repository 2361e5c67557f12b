from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    verbose_name = "Analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # every answered search (REST, MCP) is counted in the per-day statistics
        from analytics.services.search_stats import search_completed
        from platformcore.lib import hooks

        hooks.register("search_completed", search_completed)
