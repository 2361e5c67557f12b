"""Writes: storing a document (its original, its chunks, the jobs that embed, link and
summarise them), deleting it, wiping a project's documents."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, transaction

from documents.errors import TooLarge
from documents.models import Document, DocumentChunk
from documents.selectors.documents import document_get
from documents.services.chunks import (
    chunk_rows,
    chunking_of,
    chunks_cut,
    document_jobs_enqueue,
)
from documents.services.originals import original_keep, originals_delete
from documents.text_extraction import Extracted, extract, resolve_mime_type
from memories.memory_scope import Scope
from memories.models import Episode
from memories.selectors.episodes import episode_open_for_run
from memories.services.content import capped_text, check_metadata
from memories.services.episodes import parse_episode_id
from platformcore.lib.errors import InvalidInput
from tenants.models import Project

logger = logging.getLogger(__name__)
MAX_TITLE = 500
MAX_SOURCE = 2000


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
    chunking = chunking_of(upload.chunk_size, upload.chunk_overlap)
    chunks = chunks_cut(extracted, chunking)
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
        chunk_size=chunking.size,
        chunk_overlap=chunking.overlap,
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
        chunk_rows(project, document, extracted, chunks), batch_size=1000
    )
    original_keep(project=project, document=document, data=data, filename=upload.filename)
    document_jobs_enqueue(project=project, document=document)
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


def _title(upload: Upload, extracted: Extracted) -> str:
    """The given title, else the file name, else the first heading or line of the text."""
    title = upload.title.strip() if isinstance(upload.title, str) else upload.title
    if not title:
        headings = next((s.headings for s in extracted.sections if s.headings), [])
        first_line = extracted.text.strip().split("\n", 1)[0]
        title = upload.filename or (headings[0] if headings else first_line)[:120]
    return capped_text("title", title, MAX_TITLE)


@transaction.atomic
def document_delete(*, project: Project, document_id: UUID | str) -> dict[str, int]:
    """Delete a document and its chunks (hard: a document is re-uploaded, not restored)."""
    document = document_get(project=project, document_id=document_id)
    originals_delete(project=project, documents=[document.pk])
    deleted = DocumentChunk.objects.filter(project=project, document=document).delete()[1]
    chunks = deleted.get(DocumentChunk._meta.label, 0)  # not the links and citations with them
    document.delete()
    return {"documents": 1, "chunks": chunks}


def documents_reset(*, project: Project) -> dict[str, int]:
    """The `project_reset` hook: a project's reset wipes its documents with its memories
    (their original files once the reset commits)."""
    originals_delete(project=project, documents=None)
    chunks = DocumentChunk.objects.filter(project=project).delete()[1]
    documents = Document.objects.filter(project=project).delete()[1]
    return {
        "document_chunks": chunks.get(DocumentChunk._meta.label, 0),
        "documents": documents.get(Document._meta.label, 0),
    }
