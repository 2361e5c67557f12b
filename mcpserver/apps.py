from django.apps import AppConfig


class McpServerConfig(AppConfig):
    name = "mcpserver"
    verbose_name = "MCP server"
    default_auto_field = "django.db.models.BigAutoField"
