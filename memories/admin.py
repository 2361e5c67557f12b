"""The memory store in the curator admin: memories (version history as a diff, links,
entities, access statistics), history, links, and the contradiction queue.

Every change made here goes through the services the API uses, with the admin user as the
actor, so it writes history and sends events like any other write: editing a memory is
`memory_update`, deleting one `memory_delete` (soft), restoring one `memory_restore`,
resolving a contradiction `contradiction_resolve`. Rows are scoped to the curator's projects
(tenants.admin.ProjectScopedAdmin). The entities shown beside memories come from the graph
through the `admin_memory_entities` hook (the graph sits above the memory store).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from memories.models import (
    ContradictionResolution,
    ContradictionReview,
    ContradictionStatus,
    Episode,
    Memory,
    MemoryHistory,
    MemoryLink,
)
from memories.services.contradictions import contradiction_resolve
from memories.services.lifecycle import memory_decay_status
from memories.services.memories import (
    EDITABLE_FIELDS,
    memories_delete,
    memory_delete,
    memory_restore,
    memory_update,
)
from platformcore.lib.actor import Actor
from platformcore.lib.errors import ServiceError
from platformcore.lib.hooks import provider
from tenants.admin import ProjectScopedAdmin
from tenants.models import Project

_WORDS = re.compile(r"\s+|[^\s]+")


def curator(request: HttpRequest) -> Actor:
    """The actor history records for a change made in the admin."""
    return Actor("user", request.user.get_username())


def text_diff(old: str | None, new: str | None) -> SafeString:
    """Word-level difference of two texts: removed words struck through, added ones marked."""
    before, after = _WORDS.findall(old or ""), _WORDS.findall(new or "")
    parts = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(format_html("{}", "".join(before[a1:a2])))
            continue
        if a2 > a1:
            parts.append(format_html('<del class="diff">{}</del>', "".join(before[a1:a2])))
        if b2 > b1:
            parts.append(format_html('<ins class="diff">{}</ins>', "".join(after[b1:b2])))
    return mark_safe("".join(parts))  # every part went through format_html


def _values(values: dict[str, Any]) -> str:
    return ", ".join(f"{name}={value}" for name, value in values.items() if name != "content")


def history_table(entries: Iterable[MemoryHistory]) -> SafeString:
    """A memory's history, oldest first: each change with its content as a diff of the
    version before, and the other values it changed."""
    rows = []
    for entry in entries:
        if entry.event == "UPDATE" and entry.new_content is not None:
            content = text_diff(entry.old_content, entry.new_content)
        else:
            content = format_html("{}", entry.new_content or entry.old_content or "")
        changed = _values(entry.old_values)
        now = _values(entry.new_values)
        values = f"{changed} → {now}" if changed else now
        rows.append(
            format_html(
                '<tr class="history-{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>'
                "<td>{}</td></tr>",
                entry.event.lower(),
                entry.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                entry.event,
                entry.actor,
                content,
                values,
            )
        )
    if not rows:
        return mark_safe("no history")
    head = "<tr><th>when</th><th>event</th><th>by</th><th>content</th><th>values</th></tr>"
    return mark_safe(f'<table class="history">{head}{"".join(rows)}</table>')


def entity_context(project: Project, memory_ids: list[UUID]) -> dict[UUID, list[Any]]:
    """Each memory's entities, from the graph if it is installed (`admin_memory_entities`)."""
    lookup = provider("admin_memory_entities")
    if lookup is None:
        return {pk: [] for pk in memory_ids}
    return lookup(project=project, memory_ids=memory_ids)


def entity_list(entities: list[Any]) -> SafeString:
    if not entities:
        return mark_safe("none")
    return format_html_join(
        ", ",
        '<a href="{}">{}</a> <small>({})</small>',
        (
            (reverse("admin:entities_entity_change", args=[e.pk]), e.name, e.entity_type)
            for e in entities
        ),
    )


def memory_link(memory: Memory) -> SafeString:
    return format_html(
        '<a href="{}">{}</a>',
        reverse("admin:memories_memory_change", args=[memory.pk]),
        memory.content[:100],
    )


class MemoryStyles:
    css = {"all": ["memories/admin.css"]}


class MemoryScopedAdmin(ProjectScopedAdmin):
    """Admin lists of memories: no Django bulk delete (it would bypass soft delete and
    history), changes through the services."""

    Media = MemoryStyles

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories come from agents through the API and MCP

    def by_project(self, queryset: QuerySet) -> dict[Project, list[UUID]]:
        groups: dict[Project, list[UUID]] = {}
        for memory in queryset.select_related("project").only("pk", "project"):
            groups.setdefault(memory.project, []).append(memory.pk)
        return groups

    def report(self, request: HttpRequest, done: int, errors: list[str], what: str) -> None:
        for error in errors:
            self.message_user(request, error, messages.ERROR)
        if done:
            self.message_user(request, f"{done} {what}", messages.SUCCESS)


@admin.register(Memory)
class MemoryAdmin(MemoryScopedAdmin):
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
        "access_count",
        "created_at",
        "deleted_at",
    ]
    list_filter = [
        "project",
        "memory_type",
        "state",
        "layer",
        "pinned",
        ("deleted_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["content", "tags", "user_id", "agent_id", "run_id", "source"]
    # what a curator may edit is what the API may change (memory_update saves the form)
    readonly_fields = [
        "project",
        "scope",
        "state",
        "version",
        "access_statistics",
        "graph_entities",
        "links",
        "version_history",
        "id",
        "content_hash",
        "token_count",
        "created_at",
        "updated_at",
        "deleted_at",
    ]
    fields = [*readonly_fields[:2], *EDITABLE_FIELDS, *readonly_fields[2:]]
    date_hierarchy = "created_at"
    list_select_related = ["project"]
    actions = ["soft_delete", "restore", "pin", "unpin"]

    @admin.display(description="content")
    def short_content(self, memory: Memory) -> str:
        return memory.content[:80]

    @admin.display(description="scope")
    def scope(self, memory: Memory) -> str:
        return _scope(memory)

    @admin.display(description="access statistics")
    def access_statistics(self, memory: Memory) -> SafeString:
        lines = [
            ("reads", memory.access_count),
            ("last read", memory.last_accessed_at or "never"),
            ("stored decay score", f"{memory.decay_score:.3f}"),
        ]
        if memory.deleted_at is None:
            status = memory_decay_status(project=memory.project, memory_id=memory.pk)
            lines += [
                ("current score", status["current_score"]),
                ("days since last read", status["days_since_access"]),
                ("preserved by", ", ".join(status["preserved_by"]) or "nothing"),
                ("next state", _next_state(status)),
                ("pruned in (days unread)", status["predicted_prune_in_days"] or "never"),
            ]
        return format_html(
            '<table class="access">{}</table>',
            format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", lines),
        )

    @admin.display(description="entities")
    def graph_entities(self, memory: Memory) -> SafeString:
        return entity_list(entity_context(memory.project, [memory.pk])[memory.pk])

    @admin.display(description="links")
    def links(self, memory: Memory) -> SafeString:
        outgoing = MemoryLink.objects.filter(project_id=memory.project_id, from_memory=memory)
        incoming = MemoryLink.objects.filter(project_id=memory.project_id, to_memory=memory)
        rows = [
            ("→", link.link_type, link.strength, memory_link(link.to_memory))
            for link in outgoing.select_related("to_memory")
        ] + [
            ("←", link.link_type, link.strength, memory_link(link.from_memory))
            for link in incoming.select_related("from_memory")
        ]
        if not rows:
            return mark_safe("none")
        return format_html(
            '<table class="links">{}</table>',
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="version history")
    def version_history(self, memory: Memory) -> SafeString:
        return history_table(memory.history.order_by("created_at", "id"))

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> Any:
        if obj is not None and obj.deleted_at is not None:
            return self.fields  # a deleted memory is restored first, then edited
        return self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        """Through `memory_update`: history, events, re-embedding on new content."""
        changes = {
            name: form.cleaned_data[name] for name in form.changed_data if name in EDITABLE_FIELDS
        }
        if not changes:
            return
        try:
            memory_update(
                project=obj.project, memory_id=obj.pk, changes=changes, actor=curator(request)
            )
        except ServiceError as exc:
            self.message_user(request, f"not saved: {exc.message}", messages.ERROR)

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        """A soft delete with history, as `DELETE /api/v1/memories/{id}/`."""
        memory_delete(
            project=obj.project, memory_id=obj.pk, actor=curator(request), reason="curator"
        )

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        self.soft_delete(request, queryset)

    @admin.action(description="Delete (soft, with history)", permissions=["delete"])
    def soft_delete(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = 0, []
        for project, ids in self.by_project(queryset.filter(deleted_at__isnull=True)).items():
            try:
                result = memories_delete(
                    project=project,
                    actor=curator(request),
                    memory_ids=ids,
                    force=True,
                    reason="curator",
                )
                done += len(result.deleted_ids)
            except ServiceError as exc:
                errors.append(f"{project}: {exc.message}")
        self.report(request, done, errors, "deleted")

    @admin.action(description="Restore deleted memories", permissions=["change"])
    def restore(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = 0, []
        for memory in queryset.filter(deleted_at__isnull=False).select_related("project"):
            try:
                memory_restore(project=memory.project, memory_id=memory.pk, actor=curator(request))
                done += 1
            except ServiceError as exc:
                errors.append(f"{memory}: {exc.message}")
        self.report(request, done, errors, "restored")

    @admin.action(description="Pin (never decays, never pruned)", permissions=["change"])
    def pin(self, request: HttpRequest, queryset: QuerySet) -> None:
        self.report(request, *update_each(request, queryset, {"pinned": True}), "pinned")

    @admin.action(description="Unpin", permissions=["change"])
    def unpin(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = update_each(request, queryset, {"pinned": False})
        self.report(request, done, errors, "unpinned")


def update_each(
    request: HttpRequest, queryset: QuerySet, changes: dict[str, Any]
) -> tuple[int, list[str]]:
    """`memory_update` on each live memory of `queryset`; (how many, error messages)."""
    done, errors = 0, []
    for memory in queryset.filter(deleted_at__isnull=True).select_related("project"):
        try:
            memory_update(
                project=memory.project, memory_id=memory.pk, changes=changes, actor=curator(request)
            )
            done += 1
        except ServiceError as exc:
            errors.append(f"{memory}: {exc.message}")
    return done, errors


def _next_state(status: dict[str, Any]) -> str:
    if not status["predicted_next_state"]:
        return "stays"
    days = status["predicted_in_days"]
    return f"{status['predicted_next_state']} in {days} days" if days is not None else "-"


@admin.register(MemoryHistory)
class MemoryHistoryAdmin(ProjectScopedAdmin):
    list_display = ["created_at", "event", "project", "memory", "actor", "user_id"]
    list_filter = ["event", "project"]
    search_fields = ["old_content", "new_content", "actor", "memory__id"]
    readonly_fields = [field.name for field in MemoryHistory._meta.fields]
    list_select_related = ["project", "memory"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # history is written by the services, never by hand

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Episode)
class EpisodeAdmin(ProjectScopedAdmin):
    """Episodes are read here; they are started and closed through the API and MCP."""

    list_display = ["name", "project", "user_id", "agent_id", "run_id", "started_at", "ended_at"]
    list_filter = ["project", ("ended_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "summary", "user_id", "agent_id", "run_id"]
    readonly_fields = [field.name for field in Episode._meta.fields]
    list_select_related = ["project"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(MemoryLink)
class MemoryLinkAdmin(ProjectScopedAdmin):
    list_display = ["from_memory", "link_type", "to_memory", "strength", "project", "created_at"]
    list_filter = ["link_type", "project"]
    search_fields = ["from_memory__content", "to_memory__content"]
    raw_id_fields = ["from_memory", "to_memory"]
    list_select_related = ["project", "from_memory", "to_memory"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # links are made through the API (memory_link_create)


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


class ReviewStatusFilter(admin.SimpleListFilter):
    """The queue shows open reviews unless asked otherwise: a resolved one leaves it."""

    title = "status"
    parameter_name = "status__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [*ContradictionStatus.choices, ("all", "All")]

    def value(self) -> str:
        return super().value() or ContradictionStatus.OPEN

    def choices(self, changelist: Any) -> Iterable[dict[str, Any]]:
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if request.method == "POST" and super().value() is None:
            # an action from a page shown before another curator resolved a review: the
            # selection reaches the service, which says it is already resolved
            return queryset
        return queryset if self.value() == "all" else queryset.filter(status=self.value())


RESOLUTIONS = {
    "keep_a": ContradictionResolution.KEEP_A,
    "keep_b": ContradictionResolution.KEEP_B,
    "keep_both": ContradictionResolution.KEEP_BOTH,
    "merge": ContradictionResolution.MERGE,
}


@admin.register(ContradictionReview)
class ContradictionReviewAdmin(ProjectScopedAdmin):
    """Curators compare the two memories (side by side, as a diff, with their history and
    entities) and resolve with the buttons of the detail page or the list's actions, which
    call the same service as `POST /api/v1/contradictions/{id}/resolve/` (resolver: the admin
    user). The queue lists open reviews; the filter shows resolved ones with their outcome."""

    change_form_template = "admin/memories/contradictionreview/change_form.html"
    Media = MemoryStyles
    list_display = ["memory_a_summary", "memory_b_summary", "similarity", "status", "resolution"]
    list_filter = [ReviewStatusFilter, "resolution", "detected_by", "project"]
    search_fields = ["memory_a__content", "memory_b__content", "reason"]
    list_select_related = ["project", "memory_a", "memory_b"]
    date_hierarchy = "created_at"
    actions = ["keep_a", "keep_b", "keep_both", "merge"]
    fields = [
        "side_by_side",
        "content_diff",
        "entity_context",
        "history_a",
        "history_b",
        "resolution_record",
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

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a review, resolved or not, is part of the audit trail

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
            ("content", memory_link(a), memory_link(b)),
            ("confidence", f"{a.confidence:.2f}", f"{b.confidence:.2f}"),
            ("created", a.created_at.isoformat(), b.created_at.isoformat()),
            ("scope", _scope(a), _scope(b)),
            ("state", _state(a), _state(b)),
            ("reads", a.access_count, b.access_count),
            ("id", str(a.pk), str(b.pk)),
        ]
        body = format_html_join(
            "", "<tr><th>{}</th><td>{}</td><td>{}</td></tr>", ((n, x, y) for n, x, y in rows)
        )
        return format_html('<table class="contradiction">{}</table>', body)

    @admin.display(description="A → B")
    def content_diff(self, review: ContradictionReview) -> SafeString:
        return format_html(
            '<div class="content-diff">{}</div>',
            text_diff(review.memory_a.content, review.memory_b.content),
        )

    @admin.display(description="entities")
    def entity_context(self, review: ContradictionReview) -> SafeString:
        a, b = review.memory_a_id, review.memory_b_id
        found = entity_context(review.project, [a, b])
        return format_html("A: {}<br>B: {}", entity_list(found[a]), entity_list(found[b]))

    @admin.display(description="history of A")
    def history_a(self, review: ContradictionReview) -> SafeString:
        return history_table(review.memory_a.history.order_by("created_at", "id"))

    @admin.display(description="history of B")
    def history_b(self, review: ContradictionReview) -> SafeString:
        return history_table(review.memory_b.history.order_by("created_at", "id"))

    @admin.display(description="resolution in history")
    def resolution_record(self, review: ContradictionReview) -> SafeString:
        """The history rows the resolution wrote (same actor, from the resolution on)."""
        if review.status != ContradictionStatus.RESOLVED or review.resolved_at is None:
            return mark_safe("open")
        entries = MemoryHistory.objects.filter(
            project_id=review.project_id,
            memory_id__in=[review.memory_a_id, review.memory_b_id],
            actor=review.resolved_by,
            created_at__lte=review.resolved_at,
        ).order_by("created_at", "id")
        recent = [e for e in entries if (review.resolved_at - e.created_at).total_seconds() < 60]
        return format_html(
            "{} by {}<br>{}",
            ContradictionResolution(review.resolution).label,
            review.resolved_by,
            history_table(recent) if recent else "no memory changed (keep both)",
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The detail page's resolve buttons post `_resolve` (and, for merge, `content`)."""
        if request.method == "POST" and request.POST.get("_resolve") in RESOLUTIONS:
            review = self.get_object(request, object_id)
            if review is None or not self.has_change_permission(request, review):
                return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
            done = self._resolve_one(
                request,
                review,
                RESOLUTIONS[request.POST["_resolve"]],
                content=request.POST.get("content", "").strip() or None,
                note=request.POST.get("note", "").strip(),
            )
            page = "changelist" if done else "change"  # a resolved review leaves the queue
            args = [] if done else [review.pk]
            url = reverse(f"admin:memories_contradictionreview_{page}", args=args)
            return HttpResponseRedirect(url)
        extra = {**(extra_context or {}), "resolutions": ContradictionResolution.choices}
        return super().change_view(request, object_id, form_url, extra)

    def _resolve_one(
        self,
        request: HttpRequest,
        review: ContradictionReview,
        resolution: str,
        quiet: bool = False,
        **options: Any,
    ) -> bool:
        try:
            contradiction_resolve(
                project=review.project,
                review_id=review.pk,
                resolution=resolution,
                actor=curator(request),
                **options,
            )
        except ServiceError as exc:
            self.message_user(request, f"{review}: {exc.message}", messages.ERROR)
            return False
        if not quiet:
            label = ContradictionResolution(resolution).label
            self.message_user(request, f"1 resolved ({label})", messages.SUCCESS)
        return True

    def _resolve(self, request: HttpRequest, reviews: QuerySet, resolution: str) -> None:
        resolved = sum(
            self._resolve_one(request, review, resolution, quiet=True)
            for review in reviews.select_related("project")
        )
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
