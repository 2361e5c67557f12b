"""Background jobs (django-q2): embedding an uploaded document's chunks, and enriching them
(the entities they mention, their summaries). Tasks take ids and run inside the document's
project scope (row-level security)."""

from __future__ import annotations

from typing import Any

from documents.services import document_embed
from documents.services.graph import document_link_entities
from documents.services.summaries import document_summarize_chunks
from platformcore.lib.db_outage import survives_db_outage
from platformcore.lib.project_scope import project_scope
from tenants.models import Project


@survives_db_outage
def embed_document(project_id: int, document_id: str) -> dict[str, Any]:
    """Enqueued when a document is stored: embed its chunks in batches."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return {}
    with project_scope(project.pk):
        document = document_embed(project=project, document_id=document_id)
    if document is None:
        return {"document": document_id, "status": "deleted"}
    return {
        "document": document_id,
        "status": document.status,
        "chunks_embedded": document.chunks_embedded,
        "chunks_total": document.chunk_count,
    }


@survives_db_outage
def enrich_document(project_id: int, document_id: str) -> dict[str, Any]:
    """Enqueued when a document is stored or re-chunked: link its chunks to the entities
    they mention, then summarise them."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return {}
    with project_scope(project.pk):
        return {
            "document": document_id,
            "entity_links": document_link_entities(project=project, document_id=document_id),
            "summaries": document_summarize_chunks(project=project, document_id=document_id),
        }
