"""The output shape of an export job (REST)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from portability.models import ExportJob, ExportStatus


def export_job_body(job: ExportJob) -> dict[str, Any]:
    done = job.status == ExportStatus.DONE
    return {
        "id": str(job.pk),
        "status": job.status,
        "embeddings": job.embeddings,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "size_bytes": job.size_bytes,
        "counts": job.counts,
        "error": job.error or None,
        "download_url": reverse("export-download", args=[job.pk]) if done else None,
    }
