from __future__ import annotations

from django.apps import AppConfig


class OAuthConfig(AppConfig):
    name = "tenants.oauth"
    label = "tenants_oauth"
    verbose_name = "OAuth for MCP clients"
    default_auto_field = "django.db.models.BigAutoField"
