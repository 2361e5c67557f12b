from django.apps import AppConfig

from platformcore.lib import hooks


class AnalyticsConfig(AppConfig):
    name = "analytics"
    verbose_name = "Analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # every answered search (REST, MCP) is counted in the per-day statistics; imported
        # here: search_stats imports models, not loaded yet when Django imports this module
        from analytics.services.search_stats import search_completed

        hooks.register("search_completed", search_completed)
