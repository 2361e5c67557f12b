from __future__ import annotations

from django.contrib import admin

from entities.models import Entity, EntityMemory, Relation


class OutgoingRelationInline(admin.TabularInline):
    model = Relation
    fk_name = "source"
    extra = 0
    fields = ["relation_type", "target", "strength", "confidence", "valid_from", "valid_to"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ["name", "entity_type", "project", "created_at", "updated_at"]
    list_filter = ["project", "entity_type"]
    search_fields = ["name", "normalized_name", "description"]
    readonly_fields = ["normalized_name", "lookup_keys", "created_at", "updated_at"]
    exclude = ["embedding"]
    inlines = [OutgoingRelationInline]


@admin.register(Relation)
class RelationAdmin(admin.ModelAdmin):
    list_display = [
        "source",
        "relation_type",
        "target",
        "strength",
        "confidence",
        "valid_from",
        "valid_to",
        "project",
    ]
    list_filter = ["project", "relation_type", ("valid_to", admin.EmptyFieldListFilter)]
    search_fields = ["source__name", "target__name", "relation_type", "context"]
    raw_id_fields = ["source", "target"]
    readonly_fields = ["invalidated_at", "created_at", "updated_at"]


@admin.register(EntityMemory)
class EntityMemoryAdmin(admin.ModelAdmin):
    list_display = ["entity", "memory", "relevance", "project", "created_at"]
    list_filter = ["project"]
    raw_id_fields = ["entity", "memory"]
