"""The curator's queues and dashboards in the Django admin.

- Pruning queue: the memories the next prune would remove (`prune_candidates`, the selector
  behind `GET /api/v1/memories/prune/`), with pin, extend (preserve for 30 days) and delete
  now, each through the service the API uses.
- Dormant and archived memories, restored to active with `memory_preserve` (kept active for
  30 days; then they decay again from their last read).
- Project dashboards: growth, types, states, confidence, tags, tool feedback, search
  statistics and relations as server-drawn SVG charts; a consolidation preview (the
  service's dry run) with apply; the neighbourhood of an entity as a picture.

Every list and view is scoped to the curator's projects (tenants.admin); every change is
made by a service with the admin user as the actor, so it writes history.
"""

from __future__ import annotations

from datetime import timedelta
from functools import reduce
from operator import or_
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from analytics.charts import bar_chart, hbar_chart, line_chart
from analytics.models import FadedMemory, ProjectDashboard, PruneCandidate, SearchStat, ToolFeedback
from analytics.selectors import (
    confidence_histogram,
    memory_growth,
    memory_stats,
    relation_distribution,
    search_statistics,
    tag_frequency,
    tool_feedback_report,
)
from entities.admin import NEIGHBOURHOOD_NODES, neighbourhood_svg
from entities.selectors.analytics import graph_analysis
from entities.selectors.traversal import entity_subgraph
from memories.admin import MemoryScopedAdmin, curator, update_each
from memories.models import MemoryState
from memories.selectors.filters import effective_confidence
from memories.services.consolidation import memories_consolidate
from memories.services.decay_control import decay_pause, decay_paused, decay_resume
from memories.services.lifecycle import memory_preserve, prune_candidates
from memories.services.memories import memories_delete
from platformcore.lib.errors import ServiceError
from tenants.admin import ProjectScopedAdmin, curated_project, curated_projects
from tenants.models import Project

PRESERVE_DAYS = 30  # "extend" and "restore to active" keep a memory active this long
DASHBOARD_DAYS = 30


@admin.register(ToolFeedback)
class ToolFeedbackAdmin(ProjectScopedAdmin):
    list_display = ("tool_name", "project", "relevant", "sufficient", "trigger_type", "created_at")
    list_filter = ("project", "tool_name", "relevant", "sufficient", "trigger_type")
    search_fields = ("tool_name", "suggestion", "context", "session_id")
    readonly_fields = [field.name for field in ToolFeedback._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # agents report through the MCP tool


@admin.register(SearchStat)
class SearchStatAdmin(ProjectScopedAdmin):
    list_display = ["day", "project", "mode", "searches", "empty_results", "cached", "average_ms"]
    list_filter = ["project", "mode"]
    date_hierarchy = "day"
    readonly_fields = [field.name for field in SearchStat._meta.fields]

    @admin.display(description="average latency (ms)")
    def average_ms(self, row: SearchStat) -> str:
        return f"{row.latency_total_ms / row.searches:.1f}" if row.searches else "-"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # written by the search path


def _preserve_each(request: HttpRequest, queryset: QuerySet) -> tuple[int, list[str]]:
    """`memory_preserve` for PRESERVE_DAYS on each memory (as `POST …/preserve/`)."""
    until = timezone.now() + timedelta(days=PRESERVE_DAYS)
    done, errors = 0, []
    for memory in queryset.select_related("project"):
        try:
            memory_preserve(
                project=memory.project, memory_id=memory.pk, actor=curator(request), until=until
            )
            done += 1
        except ServiceError as exc:
            errors.append(f"{memory}: {exc.message}")
    return done, errors


class CuratorQueueAdmin(MemoryScopedAdmin):
    """A read-only list of memories with actions (the queues have no edit form)."""

    list_select_related = ["project"]
    search_fields = ["content", "tags", "user_id", "agent_id", "run_id"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request)  # actions, no form

    def memory_page(self, memory: Any) -> str:
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:memories_memory_change", args=[memory.pk]),
            memory.content[:120],
        )


@admin.register(PruneCandidate)
class PruneCandidateAdmin(CuratorQueueAdmin):
    """What the next prune would remove in each project, lowest effective confidence first."""

    list_display = [
        "content_link",
        "project",
        "memory_type",
        "effective",
        "importance",
        "last_accessed_at",
        "created_at",
    ]
    list_filter = ["project", "memory_type"]
    actions = ["pin", "extend", "delete_now"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        projects = list(curated_projects(request.user))
        if not projects:
            return PruneCandidate.objects.none()
        candidates = reduce(
            or_, (Q(pk__in=prune_candidates(project=p).values("pk")) for p in projects)
        )
        return (
            PruneCandidate.objects.filter(candidates)
            .annotate(effective_confidence=effective_confidence())
            .select_related("project")
            .defer("embedding", "search_vector", "summary_embedding")
            .order_by("effective_confidence", "pk")
        )

    @admin.display(description="content")
    def content_link(self, memory: PruneCandidate) -> str:
        return self.memory_page(memory)

    @admin.display(description="effective confidence", ordering="effective_confidence")
    def effective(self, memory: PruneCandidate) -> str:
        return f"{memory.effective_confidence:.3f}"  # type: ignore[attr-defined]

    @admin.action(description="Pin (never pruned)", permissions=["change"])
    def pin(self, request: HttpRequest, queryset: QuerySet) -> None:
        self.report(request, *update_each(request, queryset, {"pinned": True}), "pinned")

    @admin.action(description=f"Extend (keep active {PRESERVE_DAYS} days)", permissions=["change"])
    def extend(self, request: HttpRequest, queryset: QuerySet) -> None:
        self.report(request, *_preserve_each(request, queryset), "extended")

    @admin.action(description="Delete now (soft, with history)", permissions=["change"])
    def delete_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, errors = 0, []
        for project, ids in self.by_project(queryset).items():
            try:
                result = memories_delete(
                    project=project, actor=curator(request), memory_ids=ids, reason="pruned"
                )
                done += len(result.deleted_ids)
            except ServiceError as exc:
                errors.append(f"{project}: {exc.message}")
        self.report(request, done, errors, "deleted")


@admin.register(FadedMemory)
class FadedMemoryAdmin(CuratorQueueAdmin):
    """Live memories decay has moved to dormant or archived."""

    list_display = [
        "content_link",
        "project",
        "state",
        "memory_type",
        "decay_score",
        "last_accessed_at",
        "created_at",
    ]
    list_filter = ["project", "state", "memory_type"]
    actions = ["restore_to_active"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (
            super()
            .get_queryset(request)
            .filter(deleted_at__isnull=True, state__in=[MemoryState.DORMANT, MemoryState.ARCHIVED])
            .defer("embedding", "search_vector", "summary_embedding")
            .order_by("decay_score", "pk")
        )

    @admin.display(description="content")
    def content_link(self, memory: FadedMemory) -> str:
        return self.memory_page(memory)

    @admin.action(
        description=f"Restore to active (preserved {PRESERVE_DAYS} days)", permissions=["change"]
    )
    def restore_to_active(self, request: HttpRequest, queryset: QuerySet) -> None:
        self.report(request, *_preserve_each(request, queryset), "restored to active")


@admin.register(ProjectDashboard)
class ProjectDashboardAdmin(ProjectScopedAdmin):
    """One row per curated project, with its dashboard and consolidation preview."""

    project_field = "pk"
    list_display = ["slug", "name", "dashboard_link", "consolidation_link", "queues", "decay"]
    list_display_links = None
    search_fields = ["slug", "name"]
    actions = ["pause_decay", "resume_decay"]

    @admin.display(description="scheduled decay")
    def decay(self, project: Project) -> str:
        return "paused" if decay_paused(project=project) else "running"

    @admin.action(description="Pause the scheduled decay", permissions=["change"])
    def pause_decay(self, request: HttpRequest, queryset: QuerySet) -> None:
        for project in queryset:
            decay_pause(project=project, actor=curator(request))
        self.message_user(request, f"Decay paused in {len(queryset)} project(s).")

    @admin.action(description="Resume the scheduled decay", permissions=["change"])
    def resume_decay(self, request: HttpRequest, queryset: QuerySet) -> None:
        for project in queryset:
            decay_resume(project=project, actor=curator(request))
        self.message_user(request, f"Decay resumed in {len(queryset)} project(s).")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="dashboard")
    def dashboard_link(self, project: Project) -> str:
        url = reverse("admin:analytics_projectdashboard_dashboard", args=[project.pk])
        return format_html('<a href="{}">dashboard</a>', url)

    @admin.display(description="consolidation")
    def consolidation_link(self, project: Project) -> str:
        url = reverse("admin:analytics_projectdashboard_consolidation", args=[project.pk])
        return format_html('<a href="{}">preview</a>', url)

    @admin.display(description="queues")
    def queues(self, project: Project) -> str:
        prune = reverse("admin:analytics_prunecandidate_changelist")
        faded = reverse("admin:analytics_fadedmemory_changelist")
        review = reverse("admin:memories_contradictionreview_changelist")
        query = f"?project__id__exact={project.pk}"
        return format_html(
            '<a href="{}{}">pruning</a> · <a href="{}{}">dormant/archived</a> · '
            '<a href="{}{}">contradictions</a>',
            prune,
            query,
            faded,
            query,
            review,
            query,
        )

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path("<int:project_id>/dashboard/", view(self.dashboard), name=self._name("dashboard")),
            path(
                "<int:project_id>/consolidation/",
                view(self.consolidation),
                name=self._name("consolidation"),
            ),
            path(
                "<int:project_id>/entities/<int:entity_id>/graph/",
                view(self.entity_graph),
                name=self._name("entity_graph"),
            ),
            *super().get_urls(),
        ]

    def _name(self, view: str) -> str:
        return f"analytics_projectdashboard_{view}"

    def _project(self, request: HttpRequest, project_id: int) -> Project:
        if not self.has_view_permission(request):
            raise PermissionDenied()
        return curated_project(request, project_id)

    def _context(self, request: HttpRequest, project: Project, title: str) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "project": project,
            "title": title,
            "dashboard_url": reverse(
                "admin:analytics_projectdashboard_dashboard", args=[project.pk]
            ),
            "consolidation_url": reverse(
                "admin:analytics_projectdashboard_consolidation", args=[project.pk]
            ),
        }

    def dashboard(self, request: HttpRequest, project_id: int) -> HttpResponse:
        project = self._project(request, project_id)
        context = self._context(request, project, f"Dashboard: {project}")
        context.update(dashboard_charts(project))
        context["top_entities"] = [
            {
                **row,
                "url": reverse(
                    "admin:analytics_projectdashboard_entity_graph", args=[project.pk, row["id"]]
                ),
            }
            for row in graph_analysis(project=project, top=10)["top_connectors"]
        ]
        return render(request, "admin/analytics/dashboard.html", context)

    def consolidation(self, request: HttpRequest, project_id: int) -> HttpResponse:
        """GET: the consolidation service's dry run; POST `apply`: the same run for real."""
        project = self._project(request, project_id)
        threshold = _threshold(request)
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied()
            try:
                report = memories_consolidate(
                    project=project, actor=curator(request), similarity_threshold=threshold
                )
            except ServiceError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(
                    request,
                    f"consolidated: {report.clusters_found} clusters, "
                    f"{report.memories_merged} memories merged",
                    messages.SUCCESS,
                )
            return HttpResponseRedirect(request.path)
        context = self._context(request, project, f"Consolidation preview: {project}")
        try:
            context["report"] = memories_consolidate(
                project=project,
                actor=curator(request),
                similarity_threshold=threshold,
                dry_run=True,
            )
        except ServiceError as exc:
            context["error"] = exc.message
        context["threshold"] = threshold or ""
        context["can_apply"] = self.has_change_permission(request)
        return render(request, "admin/analytics/consolidation.html", context)

    def entity_graph(self, request: HttpRequest, project_id: int, entity_id: int) -> HttpResponse:
        project = self._project(request, project_id)
        try:
            subgraph = entity_subgraph(
                project=project, entity_id=entity_id, depth=2, max_nodes=NEIGHBOURHOOD_NODES
            )
        except ServiceError as exc:
            raise Http404(exc.message) from exc
        context = self._context(request, project, f"Neighbourhood of {subgraph.center.name}")
        names = {node.id: node.name for node in subgraph.nodes}
        now = timezone.now()
        edges = [
            (
                names.get(edge.source_id, edge.source_id),
                edge.relation_type,
                names.get(edge.target_id, edge.target_id),
                edge.strength,
                edge.valid_to is not None and edge.valid_to <= now,
            )
            for edge in subgraph.edges
        ]
        context.update(
            graph=neighbourhood_svg(subgraph, size=640), entity=subgraph.center, edges=edges
        )
        return render(request, "admin/analytics/entity_graph.html", context)


def _threshold(request: HttpRequest) -> float | None:
    raw = (request.POST or request.GET).get("threshold", "").strip()
    try:
        return float(raw) if raw else None
    except ValueError:
        return -1.0  # the service names the field in its error


def dashboard_charts(project: Project) -> dict[str, Any]:
    """Every chart and table of a project's dashboard."""
    stats = memory_stats(project=project)
    growth = memory_growth(project=project, interval="day", days=DASHBOARD_DAYS)
    searches = search_statistics(project=project, days=DASHBOARD_DAYS)
    feedback = tool_feedback_report(project=project, days=DASHBOARD_DAYS)
    relations = relation_distribution(project=project)
    per_day = searches["per_day"]
    return {
        "stats": stats,
        "searches": searches,
        "feedback": feedback,
        "relations": relations,
        "growth_chart": bar_chart(_every_day(growth), title="memories stored per day"),
        "types_chart": hbar_chart(
            sorted(stats["memories_by_type"].items(), key=lambda kv: -kv[1]),
            title="memories by type",
        ),
        "states_chart": hbar_chart(
            [(state, stats["memories_by_state"].get(state, 0)) for state in MemoryState.values],
            title="memories by state",
        ),
        "confidence_chart": bar_chart(
            [(f"{row['from']:.1f}", row["count"]) for row in confidence_histogram(project=project)],
            title="effective confidence",
            width=360,
        ),
        "tags_chart": hbar_chart(
            [(row["tag"], row["count"]) for row in tag_frequency(project=project, limit=10)],
            title="top tags",
        ),
        "feedback_chart": hbar_chart(
            [(name, row["relevant_rate"] * 100) for name, row in feedback["tools"].items()],
            title="tool feedback: relevant",
            unit="%",
        ),
        "searches_chart": bar_chart(
            [(row["day"], row["searches"]) for row in per_day], title="searches per day"
        ),
        "latency_chart": line_chart(
            [(row["day"], row["latency_ms"]["p95"] or 0) for row in per_day],
            title="search latency p95 per day",
            unit=" ms",
        ),
        "relations_chart": hbar_chart(
            [(name, row["open"]) for name, row in relations["by_type"].items()],
            title="open relations by type",
        ),
    }


def _every_day(growth: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """Memories per day over the whole window, days without any at zero."""
    counts = {row["period"]: row["count"] for row in growth}
    today = timezone.now().date()
    days = [today - timedelta(days=back) for back in range(DASHBOARD_DAYS - 1, -1, -1)]
    return [(day.isoformat(), counts.get(day.isoformat(), 0)) for day in days]
