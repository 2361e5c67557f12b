"""The entities a document's chunks mention: each chunk read by the extractor that reads
memories (the LLM's when one is configured, the offline one otherwise), its entities and
relations merged into the graph of the document's scope (as a memory's go to its user's
graph), and a `ChunkEntity` edge from the chunk to each entity. Run by the document's
enrichment job, never inside the upload; running it again replaces the document's edges."""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.db import transaction

from documents.models import ChunkEntity, Document, DocumentChunk
from entities.services.memory_graph import EXTRACTED_RELEVANCE, TextSource, graph_from_texts
from tenants.models import Project

BATCH = 100  # chunks resolved together: a handful of statements for a hundred passages


def document_link_entities(*, project: Project, document_id: UUID | str) -> int | None:
    """Link the document's chunks to the entities they mention; how many links (None when
    the document is gone, or graph extraction is off)."""
    if settings.MEMORY_GRAPH_EXTRACTION == "off":
        return None
    document = Document.objects.filter(project=project, pk=document_id).first()
    if document is None:
        return None
    chunks = DocumentChunk.objects.filter(project=project, document=document).order_by("ordinal")
    chunks = chunks.only("pk", "content")
    ChunkEntity.objects.filter(project=project, document=document).delete()
    linked = 0
    batch: list[DocumentChunk] = []
    for chunk in chunks.iterator(chunk_size=BATCH):
        batch.append(chunk)
        if len(batch) == BATCH:
            linked += _link(project, document, batch)
            batch = []
    return linked + (_link(project, document, batch) if batch else 0)


@transaction.atomic
def _link(project: Project, document: Document, chunks: list[DocumentChunk]) -> int:
    sources = [
        TextSource(
            chunk.content,
            owner=document,
            origin={"document_id": str(document.pk), "chunk_id": chunk.pk},
        )
        for chunk in chunks
    ]
    found = graph_from_texts(project=project, sources=sources)
    rows = [
        ChunkEntity(
            project=project,
            chunk=chunk,
            document=document,
            entity=entity,
            relevance=EXTRACTED_RELEVANCE,
        )
        for chunk, entities in zip(chunks, found, strict=True)
        for entity in {entity.pk: entity for entity in entities}.values()
    ]
    ChunkEntity.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)
