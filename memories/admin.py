from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from memories.models import (
    ContradictionResolution,
    ContradictionReview,
    Memory,
    MemoryHistory,
    MemoryLink,
)
from memories.services.contradictions import contradiction_resolve
from memoryplatform.lib.actor import Actor
from memoryplatform.lib.errors import ServiceError


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


def _scope(memory: Memory) -> str:
    parts = [("user", memory.user_id), ("agent", memory.agent_id), ("run", memory.run_id)]
    return ", ".join(f"{name} {value}" for name, value in parts if value)


def _summary(memory: Memory) -> str:
    gone = " · deleted" if memory.deleted_at else ""
    return format_html(
        "{}<br><small>confidence {} · {} · {}{}</small>",
        memory.content[:200],
        f"{memory.confidence:.2f}",
        memory.created_at.strftime("%Y-%m-%d %H:%M"),
        _scope(memory),
        gone,
    )


def _state(memory: Memory) -> str:
    return f"deleted {memory.deleted_at:%Y-%m-%d}" if memory.deleted_at else memory.state


@admin.register(ContradictionReview)
class ContradictionReviewAdmin(admin.ModelAdmin):
    """Curators compare the two memories and resolve with the actions, which call the same
    service as `POST /api/v1/contradictions/{id}/resolve/` (resolver: the admin user)."""

    list_display = ["memory_a_summary", "memory_b_summary", "similarity", "status", "resolution"]
    list_filter = ["status", "resolution", "detected_by", "project"]
    search_fields = ["memory_a__content", "memory_b__content", "reason"]
    list_select_related = ["project", "memory_a", "memory_b"]
    date_hierarchy = "created_at"
    actions = ["keep_a", "keep_b", "keep_both", "merge"]
    fields = [
        "side_by_side",
        "project",
        "similarity",
        "cues",
        "detected_by",
        "reason",
        "status",
        "resolution",
        "resolved_by",
        "resolved_at",
        "note",
        "created_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # reviews come from detection, never by hand

    @admin.display(description="memory A (older)")
    def memory_a_summary(self, review: ContradictionReview) -> str:
        return _summary(review.memory_a)

    @admin.display(description="memory B (newer)")
    def memory_b_summary(self, review: ContradictionReview) -> str:
        return _summary(review.memory_b)

    @admin.display(description="memories")
    def side_by_side(self, review: ContradictionReview) -> str:
        a, b = review.memory_a, review.memory_b
        rows = [
            ("", "A", "B"),
            ("content", a.content, b.content),
            ("confidence", f"{a.confidence:.2f}", f"{b.confidence:.2f}"),
            ("created", a.created_at.isoformat(), b.created_at.isoformat()),
            ("scope", _scope(a), _scope(b)),
            ("state", _state(a), _state(b)),
            ("id", str(a.pk), str(b.pk)),
        ]
        body = format_html_join(
            "", "<tr><th>{}</th><td>{}</td><td>{}</td></tr>", ((n, x, y) for n, x, y in rows)
        )
        return format_html('<table class="contradiction">{}</table>', body)

    def _resolve(self, request: HttpRequest, reviews: QuerySet, resolution: str) -> None:
        actor = Actor("user", request.user.get_username())
        resolved = 0
        for review in reviews.select_related("project"):
            try:
                contradiction_resolve(
                    project=review.project, review_id=review.pk, resolution=resolution, actor=actor
                )
                resolved += 1
            except ServiceError as exc:
                self.message_user(request, f"{review}: {exc.message}", messages.ERROR)
        if resolved:
            label = ContradictionResolution(resolution).label
            self.message_user(request, f"{resolved} resolved ({label})", messages.SUCCESS)

    @admin.action(description="Keep A (supersede B)", permissions=["change"])
    def keep_a(self, request: HttpRequest, reviews: QuerySet) -> None:
        self._resolve(request, reviews, ContradictionResolution.KEEP_A)

    @admin.action(description="Keep B (supersede A)", permissions=["change"])
    def keep_b(self, request: HttpRequest, reviews: QuerySet) -> None:
        self._resolve(request, reviews, ContradictionResolution.KEEP_B)

    @admin.action(description="Keep both (not a contradiction)", permissions=["change"])
    def keep_both(self, request: HttpRequest, reviews: QuerySet) -> None:
        self._resolve(request, reviews, ContradictionResolution.KEEP_BOTH)

    @admin.action(description="Merge B into A", permissions=["change"])
    def merge(self, request: HttpRequest, reviews: QuerySet) -> None:
        self._resolve(request, reviews, ContradictionResolution.MERGE)
