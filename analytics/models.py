"""Stats, metrics and dashboards; and what agents tell us about the tools they used."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

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
        verbose_name_plural = "tool feedback"
        indexes = [
            models.Index(
                fields=["project", "tool_name", "-created_at"], name="toolfeedback_tool_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name}: relevant={self.relevant} sufficient={self.sufficient}"
