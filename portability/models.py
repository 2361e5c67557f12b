"""An export of a project asked for over the API: a background job and its file."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from tenants.models import Project


class ExportStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ExportJob(models.Model):
    """One export: queued by `POST /api/v1/exports/`, written by a job, downloaded by the
    key's project. The file lives under MEMORY_DATA_DIR/exports/<project id>/."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(
        max_length=10, choices=ExportStatus.choices, default=ExportStatus.QUEUED
    )
    embeddings = models.BooleanField(default=True)
    requested_by = models.CharField(max_length=255, blank=True, default="")
    file_name = models.CharField(max_length=255, blank=True, default="")
    size_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"], name="exportjob_project_time")]

    def __str__(self) -> str:
        return f"export {self.pk} ({self.status})"
