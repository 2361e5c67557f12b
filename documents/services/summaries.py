"""Summaries of a document's chunks (memories.services.summaries.summarize_text: the LLM's
when configured, else the chunk's most telling sentences), written by the document's
enrichment job. Keyword search matches them (they are in the chunk's tsvector, below its
text and headings), and a budgeted search sends a chunk's summary when its text does not
fit."""

from __future__ import annotations

from uuid import UUID

from django.db import transaction

from documents.models import DocumentChunk
from memories.services.summaries import summarize_text
from platformcore.lib.bulk import update_rows
from tenants.models import Project

BATCH = 200


def document_summarize_chunks(*, project: Project, document_id: UUID | str) -> int:
    """Summarise each chunk of the document; how many got a summary."""
    chunks = DocumentChunk.objects.filter(project=project, document_id=document_id)
    chunks = chunks.order_by("ordinal").only("pk", "content")
    written = 0
    batch: list[DocumentChunk] = []
    for chunk in chunks.iterator(chunk_size=BATCH):
        summary = summarize_text(chunk.content)
        chunk.summary = summary.text if summary else ""
        chunk.summary_method = summary.method if summary else ""
        chunk.summary_tokens = summary.tokens if summary else 0
        written += summary is not None
        batch.append(chunk)
        if len(batch) == BATCH:
            _save(batch)
            batch = []
    _save(batch)
    return written


def _save(chunks: list[DocumentChunk]) -> None:
    if chunks:
        with transaction.atomic():
            update_rows(chunks, ["summary", "summary_method", "summary_tokens"])
