from __future__ import annotations

from django.contrib import admin

from tenants.models import ApiKey, Project


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "prefix",
        "project",
        "name",
        "scopes",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    list_filter = ["project", "revoked_at"]
    search_fields = ["prefix", "name", "project__slug"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
