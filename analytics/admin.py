from django.contrib import admin

from analytics.models import ToolFeedback


@admin.register(ToolFeedback)
class ToolFeedbackAdmin(admin.ModelAdmin):
    list_display = ("tool_name", "project", "relevant", "sufficient", "trigger_type", "created_at")
    list_filter = ("project", "tool_name", "relevant", "sufficient", "trigger_type")
    search_fields = ("tool_name", "suggestion", "context", "session_id")
    readonly_fields = [field.name for field in ToolFeedback._meta.fields]
