from __future__ import annotations

from django.contrib import admin

from memories.models import Memory, MemoryHistory, MemoryLink


class HistoryInline(admin.TabularInline):
    model = MemoryHistory
    extra = 0
    can_delete = False
    fields = ["created_at", "event", "actor", "old_content", "new_content"]
    readonly_fields = fields
    ordering = ["created_at"]


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = [
        "short_content",
        "project",
        "memory_type",
        "state",
        "confidence",
        "importance",
        "user_id",
        "agent_id",
        "run_id",
        "pinned",
        "version",
        "created_at",
        "deleted_at",
    ]
    list_filter = [
        "project",
        "memory_type",
        "state",
        "pinned",
        ("deleted_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["content", "tags", "user_id", "agent_id", "run_id", "source"]
    readonly_fields = [
        "id",
        "content_hash",
        "token_count",
        "version",
        "created_at",
        "updated_at",
        "access_count",
        "last_accessed_at",
    ]
    exclude = ["embedding"]
    date_hierarchy = "created_at"
    inlines = [HistoryInline]
    list_select_related = ["project"]

    @admin.display(description="content")
    def short_content(self, memory: Memory) -> str:
        return memory.content[:80]


@admin.register(MemoryHistory)
class MemoryHistoryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "event", "project", "memory", "actor", "user_id"]
    list_filter = ["event", "project"]
    search_fields = ["old_content", "new_content", "actor", "memory__id"]
    readonly_fields = [field.name for field in MemoryHistory._meta.fields]
    list_select_related = ["project", "memory"]


@admin.register(MemoryLink)
class MemoryLinkAdmin(admin.ModelAdmin):
    list_display = ["from_memory", "link_type", "to_memory", "strength", "project", "created_at"]
    list_filter = ["link_type", "project"]
    search_fields = ["from_memory__content", "to_memory__content"]
    raw_id_fields = ["from_memory", "to_memory"]
    list_select_related = ["project", "from_memory", "to_memory"]
