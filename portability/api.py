"""Exports over REST, for admin keys and their own project: `POST /api/v1/exports/` queues
one, `GET /api/v1/exports/{id}/` shows its status (and its download URL once done),
`GET /api/v1/exports/{id}/download/` returns the file."""

from __future__ import annotations

from django.http import FileResponse
from django.urls import path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from platformcore.lib.errors import NotFound
from portability.jobs import export_file, export_job_create, export_job_get
from portability.models import ExportStatus
from portability.representations import export_job_body
from tenants.views import ProjectScopedMixin


class ExportCreateSerializer(serializers.Serializer):
    embeddings = serializers.BooleanField(
        default=True, help_text="Include the vectors (false: the importer computes them)."
    )


class ExportJobSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=ExportStatus.choices)
    embeddings = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    size_bytes = serializers.IntegerField(allow_null=True)
    counts = serializers.DictField(child=serializers.IntegerField())
    error = serializers.CharField(allow_null=True)
    download_url = serializers.CharField(allow_null=True)


class ExportCollectionView(ProjectScopedMixin, APIView):
    required_scopes = {None: "admin"}

    @extend_schema(
        request=ExportCreateSerializer,
        responses={202: ExportJobSerializer},
        description="Export the key's project (memories with their history, links, the "
        "graph, documents and chunks) to a JSON-lines file, as a background job.",
    )
    def post(self, request: Request) -> Response:
        data = self.validated(ExportCreateSerializer, request.data)
        job = export_job_create(
            project=self.project, embeddings=data["embeddings"], actor=self.actor
        )
        job.refresh_from_db()
        return Response(export_job_body(job), status=status.HTTP_202_ACCEPTED)


class ExportDetailView(ProjectScopedMixin, APIView):
    required_scopes = {None: "admin"}

    @extend_schema(responses={200: ExportJobSerializer})
    def get(self, request: Request, pk: str) -> Response:
        return Response(export_job_body(export_job_get(project=self.project, job_id=pk)))


class ExportDownloadView(ProjectScopedMixin, APIView):
    required_scopes = {None: "admin"}

    @extend_schema(
        responses={200: OpenApiResponse(description="The export file (JSON lines, gzip).")}
    )
    def get(self, request: Request, pk: str) -> FileResponse:
        job = export_job_get(project=self.project, job_id=pk)
        if job.status != ExportStatus.DONE or not export_file(job).is_file():
            raise NotFound("the export is not ready, or its file was removed")
        return FileResponse(
            export_file(job).open("rb"),
            as_attachment=True,
            filename=job.file_name,
            content_type="application/gzip",
        )


urlpatterns = [
    path("exports/", ExportCollectionView.as_view(), name="export-list"),
    path("exports/<str:pk>/", ExportDetailView.as_view(), name="export-detail"),
    path("exports/<str:pk>/download/", ExportDownloadView.as_view(), name="export-download"),
]
