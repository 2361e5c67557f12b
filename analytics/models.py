"""Stats, metrics and dashboards; and what agents tell us about the tools they used."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from memories.models import Memory
from tenants.models import Project


class TriggerType(models.TextChoices):
    VOLUNTARY = "voluntary"  # the agent chose to report
    SAMPLED = "sampled"  # a client hook asked for the report


class ToolFeedback(models.Model):
    """An agent's verdict on one tool call: were the results relevant and sufficient?"""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    tool_name = models.CharField(max_length=100)
    relevant = models.BooleanField()
    sufficient = models.BooleanField()
    suggestion = models.TextField(blank=True, default="")
    context = models.TextField(blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    trigger_type = models.CharField(
        max_length=10, choices=TriggerType.choices, default=TriggerType.VOLUNTARY
    )
    actor = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "tool feedback"
        verbose_name_plural = "tool feedback"
        indexes = [
            models.Index(
                fields=["project", "tool_name", "-created_at"], name="toolfeedback_tool_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name}: relevant={self.relevant} sufficient={self.sufficient}"


# Upper bounds (ms) of the search-latency histogram's buckets; the last bucket is open-ended.
LATENCY_BOUNDS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


class SearchStat(models.Model):
    """Searches of one project on one day in one mode: counts and a latency histogram.

    A rolling table: recording a search adds to its day's row (merged in process memory and
    written once a second, analytics/services/search_stats.py), and rows older than
    MEMORY_ANALYTICS_SEARCH_DAYS are dropped. Percentiles come from the histogram's buckets
    (`LATENCY_BOUNDS_MS`), so a day is one row whatever its traffic."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    mode = models.CharField(max_length=20)
    searches = models.PositiveIntegerField(default=0)
    empty_results = models.PositiveIntegerField(default=0)
    cached = models.PositiveIntegerField(default=0, help_text="answered from the result cache")
    latency_total_ms = models.FloatField(default=0.0)
    latency_max_ms = models.FloatField(default=0.0)
    # one count per LATENCY_BOUNDS_MS bucket, plus the open-ended last one
    latency_buckets = ArrayField(models.PositiveIntegerField(), default=list)

    class Meta:
        ordering = ["-day", "mode"]
        verbose_name = "search statistic"
        verbose_name_plural = "search statistics"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "day", "mode"], name="searchstat_unique_day"
            ),
            models.CheckConstraint(
                condition=models.Q(empty_results__lte=models.F("searches")),
                name="searchstat_empty_within_searches",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.mode}: {self.searches} searches"


# Curator views in the admin: proxies (no tables of their own) give each queue its own list,
# filters and actions. They live here, above the memory store, because their pages gather
# what several apps know (the graph, analytics).


class PruneCandidate(Memory):
    """A live memory the next prune would remove (the pruning queue)."""

    class Meta:
        proxy = True
        verbose_name = "prune candidate"
        verbose_name_plural = "pruning queue"


class FadedMemory(Memory):
    """A live memory decay has moved to dormant or archived."""

    class Meta:
        proxy = True
        verbose_name = "dormant or archived memory"
        verbose_name_plural = "dormant and archived memories"


class ProjectDashboard(Project):
    """A project seen by its curator: dashboard, consolidation preview, entity pictures."""

    class Meta:
        proxy = True
        verbose_name = "project dashboard"
        verbose_name_plural = "project dashboards"
