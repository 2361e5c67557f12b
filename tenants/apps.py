from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Projects and API keys"
    default_auto_field = "django.db.models.BigAutoField"
