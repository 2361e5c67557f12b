"""Writes: storing a document (extract, chunk, queue its embedding), embedding it in
batches, deleting it, wiping a project's documents."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from documents.chunking import chunk_document
from documents.errors import TooLarge
from documents.extraction import Extracted, extract, resolve_mime_type
from documents.models import Document, DocumentChunk, DocumentStatus
from documents.selectors.documents import document_get
from memories.models import Episode
from memories.selectors.episodes import episode_open_for_run
from memories.services.content import Scope, capped_text, check_metadata
from memories.services.embedding import embed_or_none
from memories.services.episodes import parse_episode_id
from memoryplatform.lib.bulk import update_rows
from memoryplatform.lib.errors import InvalidInput
from memoryplatform.lib.tokens import estimate_tokens
from tenants.models import Project

logger = logging.getLogger(__name__)
MAX_TITLE = 500
MAX_SOURCE = 2000
EMBED_TASK = "documents.tasks.embed_document"


@dataclass(frozen=True)
class Upload:
    """What a caller hands in: the bytes and what they say about them."""

    data: bytes
    mime_type: str | None = None  # as declared; resolved by name and magic bytes when unknown
    filename: str = ""
    title: str = ""
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    scope: dict[str, Any] = field(default_factory=dict)  # user_id, agent_id, run_id
    chunk_size: int | None = None  # characters; default MEMORY_DOCUMENT_CHUNK_CHARS
    chunk_overlap: int | None = None  # default MEMORY_DOCUMENT_CHUNK_OVERLAP
    episode_id: Any = None  # default: the open episode of its run, if any


@dataclass(frozen=True)
class DocumentAdded:
    document: Document
    created: bool  # false: the same bytes were already stored in this scope


@transaction.atomic
def document_create(*, project: Project, upload: Upload) -> DocumentAdded:
    """Store a document and its chunks, and queue their embedding. The same bytes in the
    same scope return the stored document (`created` false) and change nothing."""
    scope = Scope.of(upload.scope)
    data = _checked_bytes(upload.data)
    mime_type = resolve_mime_type(upload.mime_type, upload.filename, data)
    digest = hashlib.sha256(data).hexdigest()
    existing = _stored(project, digest, scope)
    if existing is not None:
        return DocumentAdded(existing, created=False)
    extracted = extract(data, mime_type, max_pages=settings.MEMORY_DOCUMENT_MAX_PAGES)
    chunks = _chunks(extracted, upload)
    document = Document(
        project=project,
        **scope.as_dict(),
        title=_title(upload, extracted),
        source=capped_text("source", upload.source, MAX_SOURCE),
        mime_type=mime_type,
        size_bytes=len(data),
        page_count=extracted.pages,
        content_hash=digest,
        metadata=check_metadata(upload.metadata),
        chunk_count=len(chunks),
        episode_id=_episode_id(project, upload, scope),
    )
    try:
        with transaction.atomic():  # a concurrent upload of the same bytes wins the race
            document.save(force_insert=True)
    except IntegrityError:
        winner = _stored(project, digest, scope)
        if winner is None:
            raise
        return DocumentAdded(winner, created=False)
    DocumentChunk.objects.bulk_create(
        [_chunk_row(project, document, extracted, ordinal, chunk) for ordinal, chunk in chunks],
        batch_size=1000,
    )
    _enqueue_embedding(project, document)
    return DocumentAdded(document, created=True)


def _episode_id(project: Project, upload: Upload, scope: Scope) -> Any:
    """The episode named, else the run's open episode (as for memories)."""
    if upload.episode_id:
        episode = Episode.objects.filter(
            project=project, pk=parse_episode_id(upload.episode_id)
        ).first()
        if episode is None:
            message = "no such episode in this project"
            raise InvalidInput(message, fields={"episode_id": [message]})
        return episode.pk
    current = episode_open_for_run(project=project, run_id=scope.run_id)
    return current.pk if current else None


def check_size(size: int) -> None:
    """TooLarge (413) for an upload of `size` bytes over MEMORY_DOCUMENT_MAX_BYTES."""
    limit = settings.MEMORY_DOCUMENT_MAX_BYTES
    if size > limit:
        message = f"at most {limit} bytes, got {size}"
        raise TooLarge(f"The document is too large: {message}", fields={"file": [message]})


def _checked_bytes(data: bytes) -> bytes:
    check_size(len(data))
    if not data.strip():
        raise InvalidInput("the document is empty", fields={"file": ["must not be empty"]})
    return data


def _stored(project: Project, digest: str, scope: Scope) -> Document | None:
    return Document.objects.filter(project=project, content_hash=digest, **scope.as_dict()).first()


def _chunks(extracted: Extracted, upload: Upload) -> list[tuple[int, Any]]:
    if not extracted.text.strip():
        message = "no readable text in the document (a scanned PDF needs OCR first)"
        raise InvalidInput(message, fields={"file": [message]})
    size = _positive("chunk_size", upload.chunk_size, settings.MEMORY_DOCUMENT_CHUNK_CHARS, 100)
    overlap = _positive(
        "chunk_overlap", upload.chunk_overlap, settings.MEMORY_DOCUMENT_CHUNK_OVERLAP, 0
    )
    chunks = chunk_document(extracted, size=size, overlap=overlap)
    limit = settings.MEMORY_DOCUMENT_MAX_CHUNKS
    if len(chunks) > limit:
        message = f"at most {limit} chunks, got {len(chunks)} (a larger chunk_size makes fewer)"
        raise TooLarge(f"The document has too many chunks: {message}", fields={"file": [message]})
    return list(enumerate(chunks))


def _positive(name: str, value: Any, default: int, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= 100_000:
        message = f"an integer between {minimum} and 100000"
        raise InvalidInput(f"{name} must be {message}", fields={name: [message]})
    return value


def _title(upload: Upload, extracted: Extracted) -> str:
    """The given title, else the file name, else the first heading or line of the text."""
    title = upload.title.strip() if isinstance(upload.title, str) else upload.title
    if not title:
        headings = next((s.headings for s in extracted.sections if s.headings), [])
        first_line = extracted.text.strip().split("\n", 1)[0]
        title = upload.filename or (headings[0] if headings else first_line)[:120]
    return capped_text("title", title, MAX_TITLE)


def _chunk_row(
    project: Project, document: Document, extracted: Extracted, ordinal: int, chunk: Any
) -> DocumentChunk:
    content = extracted.text[chunk.start : chunk.end]
    return DocumentChunk(
        project=project,
        document=document,
        ordinal=ordinal,
        char_start=chunk.start,
        char_end=chunk.end,
        page=chunk.page,
        heading_path=[heading[:500] for heading in chunk.headings],
        heading=" / ".join(chunk.headings),
        content=content,
        token_count=estimate_tokens(content),
    )


def _enqueue_embedding(project: Project, document: Document) -> None:
    from memories.tasks import enqueue

    enqueue(EMBED_TASK, project.pk, str(document.pk))


def document_embed(*, project: Project, document_id: UUID | str) -> Document | None:
    """Embed the document's chunks still without a vector, MEMORY_DOCUMENT_EMBED_BATCH at a
    time, each batch committed with the progress it made (`chunks_embedded`), so the API
    shows how far the job is. A provider failure marks the document failed with the reason;
    its chunks stay searchable by keywords and a later run takes up where this one stopped.
    None when the document was deleted meanwhile."""
    documents = Document.objects.filter(project=project, pk=document_id)
    if not documents.update(status=DocumentStatus.INDEXING, status_reason=""):
        return None
    pending = DocumentChunk.objects.filter(
        project=project, document_id=document_id, embedding__isnull=True
    ).order_by("ordinal")
    while batch := list(pending.only("pk", "content")[: settings.MEMORY_DOCUMENT_EMBED_BATCH]):
        vectors = embed_or_none([chunk.content for chunk in batch])
        if any(vector is None for vector in vectors):
            reason = "the embedding provider failed; keyword search works meanwhile"
            documents.update(status=DocumentStatus.FAILED, status_reason=reason)
            return documents.first()
        with transaction.atomic():
            for chunk, vector in zip(batch, vectors, strict=True):
                chunk.embedding = vector
            update_rows(batch, ["embedding"])
            documents.update(chunks_embedded=_embedded(project, document_id))
    documents.update(status=DocumentStatus.READY, indexed_at=timezone.now())
    return documents.first()


def _embedded(project: Project, document_id: UUID | str) -> int:
    return DocumentChunk.objects.filter(
        project=project, document_id=document_id, embedding__isnull=False
    ).count()


@transaction.atomic
def document_delete(*, project: Project, document_id: UUID | str) -> dict[str, int]:
    """Delete a document and its chunks (hard: a document is re-uploaded, not restored)."""
    document = document_get(project=project, document_id=document_id)
    chunks = DocumentChunk.objects.filter(project=project, document=document).delete()[0]
    document.delete()
    return {"documents": 1, "chunks": chunks}


def documents_reset(*, project: Project) -> dict[str, int]:
    """The `project_reset` hook: a project's reset wipes its documents with its memories."""
    return {
        "document_chunks": DocumentChunk.objects.filter(project=project).delete()[0],
        "documents": Document.objects.filter(project=project).delete()[0],
    }
