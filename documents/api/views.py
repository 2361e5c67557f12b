"""Documents over REST: upload (multipart or JSON), list, read, chunks, the original bytes,
re-chunking, delete."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from documents.api.serializers import (
    DocumentChunkSerializer,
    DocumentCreatedSerializer,
    DocumentDeletedSerializer,
    DocumentListSerializer,
    DocumentRechunkSerializer,
    DocumentSerializer,
    DocumentUploadSerializer,
)
from documents.models import DocumentOriginal
from documents.refs import citing_memories
from documents.representations import chunk_body, document_body, original_body
from documents.selectors.documents import (
    DocumentFilters,
    document_chunks,
    document_get,
    document_list,
)
from documents.services import Upload, document_create, document_delete, document_rechunk
from documents.services.originals import original_chunks, original_get
from documents.text_extraction import SUPPORTED
from platformcore.lib.api import JSONParser
from platformcore.lib.schema import error_response, page_of, path_ids
from tenants.views import ProjectScopedMixin

UPLOAD_FIELDS = ("mime_type", "filename", "title", "source", "metadata", "episode_id")


def upload_from(data: dict[str, Any]) -> Upload:
    scope = {name: data[name] for name in ("user_id", "agent_id", "run_id") if name in data}
    return Upload(
        data=data["data"],
        scope=scope,
        chunk_size=data.get("chunk_size"),
        chunk_overlap=data.get("chunk_overlap"),
        **{name: data[name] for name in UPLOAD_FIELDS if name in data},
    )


class DocumentCollectionView(ProjectScopedMixin, APIView):
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(
        request=DocumentUploadSerializer,
        responses={
            201: DocumentCreatedSerializer,
            200: DocumentCreatedSerializer,
            415: error_response("Not plain text, Markdown, HTML or PDF."),
        },
        description="Store a document: multipart `file`, or JSON `text` / `content_base64`. "
        "Plain text, Markdown, HTML and PDF; other types 415. The same bytes in the same "
        "scope return the stored document with `created: false` (200).",
    )
    def post(self, request: Request) -> Response:
        data = self.validated(DocumentUploadSerializer, request.data)
        added = document_create(project=self.project, upload=upload_from(data))
        body = {**_detail(self.project, added.document), "created": added.created}
        return Response(body, status=status.HTTP_201_CREATED if added.created else 200)

    @extend_schema(
        operation_id="v1_documents_list",
        parameters=[DocumentListSerializer],
        responses=page_of(DocumentSerializer),
    )
    def get(self, request: Request) -> Response:
        data = self.validated(DocumentListSerializer, request.query_params)
        page = document_list(
            project=self.project,
            filters=DocumentFilters(
                **{k: data.get(k) for k in ("user_id", "agent_id", "run_id", "status")}
            ),
            limit=data.get("limit") or settings.MEMORY_DEFAULT_PAGE_SIZE,
            offset=data["offset"],
        )
        return Response(
            {
                "results": [document_body(document) for document in page.results],
                "count": page.count,
                "limit": page.limit,
                "offset": page.offset,
            }
        )


@path_ids(id="uuid")
class DocumentDetailView(ProjectScopedMixin, APIView):
    @extend_schema(responses=DocumentSerializer)
    def get(self, request: Request, pk: str) -> Response:
        document = document_get(project=self.project, document_id=pk)
        refs = citing_memories(project=self.project, document=document)
        return Response({**_detail(self.project, document), "memory_refs": refs})

    @extend_schema(responses={200: DocumentDeletedSerializer})
    def delete(self, request: Request, pk: str) -> Response:
        return Response(document_delete(project=self.project, document_id=pk))


@path_ids(id="uuid")
class DocumentChunksView(ProjectScopedMixin, APIView):
    @extend_schema(parameters=[DocumentListSerializer], responses=page_of(DocumentChunkSerializer))
    def get(self, request: Request, pk: str) -> Response:
        document = document_get(project=self.project, document_id=pk)
        data = self.validated(DocumentListSerializer, request.query_params)
        limit = data.get("limit") or settings.MEMORY_DEFAULT_PAGE_SIZE
        chunks = document_chunks(project=self.project, document=document)
        page = list(chunks[data["offset"] : data["offset"] + limit])
        refs: dict[int, list[dict[str, Any]]] = {chunk.pk: [] for chunk in page}
        for ref in citing_memories(project=self.project, document=document, chunk_ids=list(refs)):
            refs[ref["chunk_id"]].append(ref)
        return Response(
            {
                "results": [{**chunk_body(chunk), "memory_refs": refs[chunk.pk]} for chunk in page],
                "count": document.chunk_count,
                "limit": limit,
                "offset": data["offset"],
            }
        )


def _detail(project: Any, document: Any) -> dict[str, Any]:
    """A document as its single read shows it: with where to download its original."""
    original = (
        DocumentOriginal.objects.filter(project=project, document=document).defer("data").first()
    )
    return {**document_body(document), "original": original_body(document, original)}


@path_ids(id="uuid")
class DocumentOriginalView(ProjectScopedMixin, APIView):
    @extend_schema(
        responses={
            (200, media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description="The bytes uploaded, with their media type."
            )
            for media_type in SUPPORTED
        },
        description="Download the document as it was uploaded, byte for byte (`ETag` is its "
        "SHA-256). 404 for a document stored before originals were kept.",
    )
    def get(self, request: Request, pk: str) -> HttpResponse:
        document = document_get(project=self.project, document_id=pk)
        original = original_get(project=self.project, document=document)
        response = HttpResponse(
            b"".join(original_chunks(original)), content_type=document.mime_type
        )
        filename = original.filename or document.title or str(document.pk)
        response["Content-Disposition"] = content_disposition_header(True, filename)
        response["ETag"] = f'"{original.sha256}"'
        return response


@path_ids(id="uuid")
class DocumentRechunkView(ProjectScopedMixin, APIView):
    @extend_schema(
        request=DocumentRechunkSerializer,
        responses={200: DocumentSerializer, 409: error_response("The original was not kept.")},
        description="Cut the document again from its original with other chunk settings; "
        "its chunks are embedded, linked and summarised again, citations follow their passage.",
    )
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(DocumentRechunkSerializer, request.data)
        document = document_rechunk(
            project=self.project,
            document_id=pk,
            chunk_size=data.get("chunk_size"),
            chunk_overlap=data.get("chunk_overlap"),
        )
        return Response(_detail(self.project, document))
