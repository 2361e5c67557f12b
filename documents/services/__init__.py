"""Writes of the documents app: storing and deleting documents (documents.py), their chunks
and jobs (chunks.py), their original bytes (originals.py), the entities their chunks mention
(graph.py) and the chunks' summaries (summaries.py)."""

from documents.services.chunks import EMBED_TASK, document_embed, document_rechunk
from documents.services.documents import (
    DocumentAdded,
    Upload,
    check_size,
    document_create,
    document_delete,
    documents_reset,
)

__all__ = [
    "EMBED_TASK",
    "DocumentAdded",
    "Upload",
    "check_size",
    "document_create",
    "document_delete",
    "document_embed",
    "document_rechunk",
    "documents_reset",
]
