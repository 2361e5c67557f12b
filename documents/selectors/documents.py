"""Documents of a project, listed and read."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from django.db.models import QuerySet

from documents.models import Document, DocumentChunk, DocumentStatus
from platformcore.lib.errors import NotFound, check_choice, parse_uuid
from tenants.models import Project

SCOPE_FIELDS = ("user_id", "agent_id", "run_id")


@dataclass(frozen=True)
class DocumentFilters:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    status: str | None = None

    def apply(self, documents: QuerySet[Document]) -> QuerySet[Document]:
        scope = {name: value for name in SCOPE_FIELDS if (value := getattr(self, name))}
        if self.status:
            check_choice("status", self.status, DocumentStatus.values)
            scope["status"] = self.status
        return documents.filter(**scope)


@dataclass(frozen=True)
class DocumentPage:
    results: list[Document]
    count: int
    limit: int
    offset: int


def document_get(
    *, project: Project, document_id: UUID | str, for_update: bool = False
) -> Document:
    """One of the project's documents; another project's is NotFound, as a missing one."""
    pk = parse_uuid(document_id, what="document")
    documents = Document.objects.filter(project=project, pk=pk)
    document = (documents.select_for_update() if for_update else documents).first()
    if document is None:
        raise NotFound("document not found")
    return document


def document_list(
    *, project: Project, filters: DocumentFilters, limit: int, offset: int
) -> DocumentPage:
    """A page of the project's documents, newest first."""
    documents = filters.apply(Document.objects.filter(project=project))
    page = list(documents.order_by("-created_at", "-id")[offset : offset + limit])
    return DocumentPage(page, documents.count(), limit, offset)


def document_chunks(*, project: Project, document: Document) -> QuerySet[DocumentChunk]:
    """The document's chunks in reading order."""
    return DocumentChunk.objects.filter(project=project, document=document).order_by("ordinal")
