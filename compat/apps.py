from django.apps import AppConfig


class CompatConfig(AppConfig):
    name = "compat"
    verbose_name = "Compatibility layers"
    default_auto_field = "django.db.models.BigAutoField"
