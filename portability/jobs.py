"""Exports over the API: a job row, a background task writing the file, and the reads that
show its status and hand out the file. The task runs the same `project_export` as
`manage.py export_project`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memories.tasks import enqueue
from platformcore.lib.actor import Actor
from platformcore.lib.db_outage import is_db_outage, survives_db_outage
from platformcore.lib.errors import NotFound
from platformcore.lib.project_scope import all_projects, project_scope
from portability.exporting import project_export
from portability.models import ExportJob, ExportStatus
from tenants.models import Project

logger = logging.getLogger(__name__)
TASK = "portability.jobs.run_export"


def export_directory(project_id: int) -> Path:
    return Path(settings.DATA_DIR) / "exports" / str(project_id)


def export_file(job: ExportJob) -> Path:
    return export_directory(job.project_id) / job.file_name


@transaction.atomic
def export_job_create(*, project: Project, embeddings: bool, actor: Actor) -> ExportJob:
    """Record the export and queue its job with this transaction (memories.tasks.enqueue)."""
    job = ExportJob.objects.create(project=project, embeddings=embeddings, requested_by=str(actor))
    enqueue(TASK, str(job.pk))
    return job


def export_job_get(*, project: Project, job_id: UUID | str) -> ExportJob:
    """The project's export; another project's, or none, is a 404."""
    try:
        job = ExportJob.objects.filter(project=project, pk=job_id).first()
    except (ValueError, TypeError, ValidationError):  # not a UUID
        job = None
    if job is None:
        raise NotFound("export not found")
    return job


@survives_db_outage
def run_export(job_id: str) -> dict[str, Any]:
    """The task: write the project's file and record the outcome on the job."""
    with all_projects("job: find an export job"):
        job = ExportJob.objects.select_related("project").filter(pk=job_id).first()
    if job is None:
        return {}
    with project_scope(job.project_id):
        ExportJob.objects.filter(pk=job.pk).update(status=ExportStatus.RUNNING)
        name = f"{job.project.slug}-{timezone.now():%Y%m%dT%H%M%S}-{str(job.pk)[:8]}.jsonl.gz"
        try:
            report = project_export(
                project=job.project,
                out=export_directory(job.project_id) / name,
                embeddings=job.embeddings,
            )
        except Exception as exc:  # the job records why; the worker logs the trace
            if is_db_outage(exc):  # nothing to record it in: run again once the database is back
                raise
            logger.exception("export %s failed", job.pk)
            _finish(job, status=ExportStatus.FAILED, error=str(exc) or type(exc).__name__)
            raise
        _finish(
            job,
            status=ExportStatus.DONE,
            file_name=name,
            size_bytes=report.size_bytes,
            counts=report.counts,
        )
        return report.as_dict()


def _finish(job: ExportJob, **values: Any) -> None:
    ExportJob.objects.filter(pk=job.pk).update(finished_at=timezone.now(), **values)
