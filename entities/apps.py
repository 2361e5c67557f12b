from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "entities"
    verbose_name = "Knowledge graph"
    default_auto_field = "django.db.models.BigAutoField"
