"""The output shapes of documents and chunk hits: REST views and MCP tools render with them."""

from __future__ import annotations

from typing import Any

from documents.models import Document, DocumentChunk

SNIPPET_CHARACTERS = 240  # a snippet without query words: the chunk's first characters


def document_body(document: Document) -> dict[str, Any]:
    return {
        "id": str(document.pk),
        "title": document.title,
        "source": document.source,
        "mime_type": document.mime_type,
        "size_bytes": document.size_bytes,
        "page_count": document.page_count,
        "user_id": document.user_id,
        "agent_id": document.agent_id,
        "run_id": document.run_id,
        "metadata": document.metadata,
        "content_hash": document.content_hash,
        "status": document.status,
        "status_reason": document.status_reason,
        "progress": {
            "chunks_embedded": document.chunks_embedded,
            "chunks_total": document.chunk_count,
        },
        "created_at": document.created_at.isoformat(),
        "indexed_at": document.indexed_at.isoformat() if document.indexed_at else None,
        "episode_id": str(document.episode_id) if document.episode_id else None,
    }


def chunk_body(chunk: DocumentChunk) -> dict[str, Any]:
    return {
        "id": chunk.pk,
        "document_id": str(chunk.document_id),
        "ordinal": chunk.ordinal,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "page": chunk.page,
        "heading_path": list(chunk.heading_path),
        "content": chunk.content,
        "token_count": chunk.token_count,
    }


def chunk_hit_body(
    chunk: DocumentChunk, *, score: float, parts: dict[str, float], snippet: str | None
) -> dict[str, Any]:
    """A chunk found by search: where it is (document, page, position, headings), the
    passage, a snippet with the query's words in **bold**, and its score."""
    return {
        "kind": "document",
        **chunk_body(chunk),
        "document_title": chunk.document.title,
        "snippet": snippet or chunk.content[:SNIPPET_CHARACTERS],
        "score": round(score, 6),
        "score_parts": {name: round(float(value), 6) for name, value in parts.items()},
    }
