"""A document's chunks: cut from its extracted text, embedded in batches by a job, and cut
again from the kept original with other settings (`document_rechunk`).

Storing or re-chunking a document queues its jobs when the transaction commits: the
embedding (`embed_document`) and the enrichment (`enrich_document`: the entities each chunk
mentions, and each chunk's summary)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from documents.chunking import Chunk, chunk_document
from documents.errors import TooLarge
from documents.models import Document, DocumentChunk, DocumentStatus, MemoryRef
from documents.selectors.documents import document_get
from documents.services.originals import original_bytes
from documents.text_extraction import Extracted, extract
from memories.services.embedding import embed_or_none
from memories.tasks import enqueue
from platformcore.lib.bulk import update_rows
from platformcore.lib.errors import InvalidInput
from platformcore.lib.tokens import count_tokens_batch
from tenants.models import Project

EMBED_TASK = "documents.tasks.embed_document"
ENRICH_TASK = "documents.tasks.enrich_document"


@dataclass(frozen=True)
class Chunking:
    size: int  # characters
    overlap: int


def chunking_of(size: Any, overlap: Any) -> Chunking:
    """The chunk settings asked for, each checked, the settings' defaults for the others."""
    return Chunking(
        _positive("chunk_size", size, settings.MEMORY_DOCUMENT_CHUNK_CHARS, 100),
        _positive("chunk_overlap", overlap, settings.MEMORY_DOCUMENT_CHUNK_OVERLAP, 0),
    )


def _positive(name: str, value: Any, default: int, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= 100_000:
        message = f"an integer between {minimum} and 100000"
        raise InvalidInput(f"{name} must be {message}", fields={name: [message]})
    return value


def chunks_cut(extracted: Extracted, chunking: Chunking) -> list[Chunk]:
    """The document's chunks, within MEMORY_DOCUMENT_MAX_CHUNKS (TooLarge past it)."""
    if not extracted.text.strip():
        message = "no readable text in the document (a scanned PDF needs OCR first)"
        raise InvalidInput(message, fields={"file": [message]})
    chunks = chunk_document(extracted, size=chunking.size, overlap=chunking.overlap)
    limit = settings.MEMORY_DOCUMENT_MAX_CHUNKS
    if len(chunks) > limit:
        message = f"at most {limit} chunks, got {len(chunks)} (a larger chunk_size makes fewer)"
        raise TooLarge(f"The document has too many chunks: {message}", fields={"file": [message]})
    return chunks


def chunk_rows(
    project: Project, document: Document, extracted: Extracted, chunks: list[Chunk]
) -> list[DocumentChunk]:
    texts = [extracted.text[chunk.start : chunk.end] for chunk in chunks]
    return [
        DocumentChunk(
            project=project,
            document=document,
            ordinal=ordinal,
            char_start=chunk.start,
            char_end=chunk.end,
            page=chunk.page,
            heading_path=[heading[:500] for heading in chunk.headings],
            heading=" / ".join(chunk.headings),
            content=content,
            token_count=tokens,
        )
        for ordinal, (chunk, content, tokens) in enumerate(
            zip(chunks, texts, count_tokens_batch(texts), strict=True)
        )
    ]


def document_jobs_enqueue(*, project: Project, document: Document) -> None:
    enqueue(EMBED_TASK, project.pk, str(document.pk))
    enqueue(ENRICH_TASK, project.pk, str(document.pk))


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
def document_rechunk(
    *, project: Project, document_id: UUID | str, chunk_size: Any = None, chunk_overlap: Any = None
) -> Document:
    """Cut the document again from its kept original with these chunk settings: new chunks
    (embedded, linked to their entities and summarised again by the jobs), the memories'
    citations moved to the new chunk holding what they quote. A document stored before
    originals were kept cannot be re-chunked (409: upload it again)."""
    document = document_get(project=project, document_id=document_id, for_update=True)
    chunking = chunking_of(
        chunk_size if chunk_size is not None else document.chunk_size,
        chunk_overlap if chunk_overlap is not None else document.chunk_overlap,
    )
    data = original_bytes(project=project, document=document)
    extracted = extract(data, document.mime_type, max_pages=settings.MEMORY_DOCUMENT_MAX_PAGES)
    chunks = chunks_cut(extracted, chunking)
    cited = _citations(project, document)
    DocumentChunk.objects.filter(project=project, document=document).delete()
    rows = DocumentChunk.objects.bulk_create(
        chunk_rows(project, document, extracted, chunks), batch_size=1000
    )
    moved: dict[tuple[Any, int], MemoryRef] = {}
    for ref in (_moved(citation, rows) for citation in cited):
        moved.setdefault((ref.memory_id, ref.chunk_id), ref)  # one per memory and chunk
    MemoryRef.objects.bulk_create(list(moved.values()))
    Document.objects.filter(pk=document.pk, project=project).update(
        chunk_count=len(rows),
        chunks_embedded=0,
        chunk_size=chunking.size,
        chunk_overlap=chunking.overlap,
        status=DocumentStatus.PENDING,
        status_reason="",
        indexed_at=None,
    )
    document.refresh_from_db()
    document_jobs_enqueue(project=project, document=document)
    return document


@dataclass(frozen=True)
class _Citation:
    ref: MemoryRef
    start: int  # [start, end) of what it quotes (or of its whole chunk) in the document's text
    end: int


def _citations(project: Project, document: Document) -> list[_Citation]:
    refs = MemoryRef.objects.filter(project=project, document=document).select_related("chunk")
    found = []
    for ref in refs.defer("chunk__embedding", "chunk__search_vector"):
        chunk = ref.chunk
        if ref.quote_start is not None and ref.quote_end is not None:
            span = (chunk.char_start + ref.quote_start, chunk.char_start + ref.quote_end)
        else:
            span = (chunk.char_start, chunk.char_end)
        found.append(_Citation(ref, *span))
    return found


def _moved(citation: _Citation, chunks: list[DocumentChunk]) -> MemoryRef:
    """The reference on the new chunk overlapping most of what it cites (the first of equals),
    its quote's span given within that chunk when the chunk holds all of it."""
    ref = citation.ref

    def overlap(chunk: DocumentChunk) -> int:
        return min(chunk.char_end, citation.end) - max(chunk.char_start, citation.start)

    chunk = max(chunks, key=lambda c: (overlap(c), -c.ordinal))
    inside = chunk.char_start <= citation.start and citation.end <= chunk.char_end
    quoted = ref.quote_start is not None and inside
    return MemoryRef(
        project_id=ref.project_id,
        memory_id=ref.memory_id,
        chunk=chunk,
        document_id=ref.document_id,
        relation=ref.relation,
        quote=ref.quote,
        quote_start=citation.start - chunk.char_start if quoted else None,
        quote_end=citation.end - chunk.char_start if quoted else None,
        score=ref.score,
        created_at=ref.created_at,
    )
