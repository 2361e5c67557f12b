"""The output shapes of documents and chunk hits: REST views and MCP tools render with them."""

from __future__ import annotations

from typing import Any

from documents.models import Document, DocumentChunk, DocumentOriginal

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
        "chunk_size": document.chunk_size,
        "chunk_overlap": document.chunk_overlap,
    }


def original_body(document: Document, original: DocumentOriginal | None) -> dict[str, Any] | None:
    """Where to download what was uploaded; None for a document stored before originals were
    kept."""
    if original is None:
        return None
    return {
        "filename": original.filename,
        "size_bytes": original.size_bytes,
        "sha256": original.sha256,
        "download_url": f"/api/v1/documents/{document.pk}/original/",
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
        "summary": chunk.summary,
    }


def chunk_hit_body(
    chunk: DocumentChunk,
    *,
    score: float,
    parts: dict[str, float],
    snippet: str | None,
    entities: list[dict[str, Any]] | None = None,
    summarized: bool = False,
) -> dict[str, Any]:
    """A chunk found by search: where it is (document, page, position, headings), the
    passage (its summary when a token budget took that: `summarized`), a snippet with the
    query's words in **bold**, its score, and the entities of the question it mentions
    (`entities`: what tied it to the question through the graph)."""
    body = chunk_body(chunk)
    if summarized:
        body["content"] = chunk.summary
    return {
        "kind": "document",
        **body,
        "document_title": chunk.document.title,
        "snippet": snippet or chunk.content[:SNIPPET_CHARACTERS],
        "score": round(score, 6),
        "score_parts": {name: round(float(value), 6) for name, value in parts.items()},
        "entities": entities or [],
        "summarized": summarized,
    }
