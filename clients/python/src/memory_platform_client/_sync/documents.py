# Generated from _async/documents.py by clients/python/scripts/unasync.py: do not edit.
# ruff: noqa: UP028
"""Uploaded documents (text, Markdown, HTML, PDF): stored, chunked and searchable."""

from __future__ import annotations

import base64
import json as jsonlib
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_platform_client import _http
from memory_platform_client.types import (
    JSON,
    Chunk,
    ChunkPage,
    Document,
    DocumentCreated,
    DocumentPage,
)

if TYPE_CHECKING:
    from memory_platform_client._sync.client import Client


class Documents:
    """Documents and their chunks; chunks are found by search beside memories."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def upload(
        self,
        text: str | None = None,
        *,
        path: str | PathLike[str] | None = None,
        content: bytes | None = None,
        filename: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        source: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: JSON | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
    ) -> DocumentCreated:
        """Store a document from exactly one of `text`, a file at `path` or raw `content`
        bytes (files are sent as a multipart upload; the type comes from `mime_type`, else
        the file name). The same bytes in the same scope return the stored document with
        `created: False`."""
        if sum(value is not None for value in (text, path, content)) != 1:
            raise TypeError("upload() takes exactly one of text, path or content")
        fields: dict[str, Any] = _http.body(
            mime_type=mime_type,
            title=title,
            source=source,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            metadata=metadata,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
        )
        if text is not None:
            return self._client._call("documents.upload", json={"text": text, **fields})
        if path is not None:
            content, filename = Path(path).read_bytes(), filename or Path(path).name
        if filename is None:  # raw bytes without a name: JSON, typed by mime_type
            encoded = base64.b64encode(content or b"").decode()
            return self._client._call(
                "documents.upload", json={"content_base64": encoded, **fields}
            )
        form = {k: jsonlib.dumps(v) if isinstance(v, dict) else str(v) for k, v in fields.items()}
        return self._client._call(
            "documents.upload", files={"file": (filename, content or b"")}, data=form
        )

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> DocumentPage:
        params = _http.query(
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            status=status,
            limit=limit,
            offset=offset,
        )
        return self._client._call("documents.list", params=params)

    def iter(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        status: str | None = None,
        page_size: int = _http.MAX_PAGE_SIZE,
    ) -> Iterator[Document]:
        params = _http.query(user_id=user_id, agent_id=agent_id, run_id=run_id, status=status)
        for document in self._client._pages("documents.iter", params=params, page_size=page_size):
            yield document

    def get(self, document_id: str) -> Document:
        """A document with its indexing status and progress."""
        return self._client._call("documents.get", path={"id": document_id})

    def delete(self, document_id: str) -> JSON:
        """Delete a document and its chunks; the counts deleted."""
        return self._client._call("documents.delete", path={"id": document_id})

    def original(self, document_id: str) -> bytes:
        """The bytes the document was uploaded as, byte for byte."""
        return self._client._call("documents.original", path={"id": document_id}, raw=True)

    def rechunk(
        self,
        document_id: str,
        *,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
    ) -> Document:
        """Cut the document again from its original with other chunk settings."""
        json = _http.body(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        return self._client._call("documents.rechunk", path={"id": document_id}, json=json)

    def chunks(self, document_id: str, *, limit: int | None = None, offset: int = 0) -> ChunkPage:
        """One page of the document's chunks, in order."""
        params = _http.query(limit=limit, offset=offset)
        return self._client._call("documents.chunks", path={"id": document_id}, params=params)

    def iter_chunks(
        self, document_id: str, *, page_size: int = _http.MAX_PAGE_SIZE
    ) -> Iterator[Chunk]:
        for chunk in self._client._pages(
            "documents.iter_chunks", path={"id": document_id}, params={}, page_size=page_size
        ):
            yield chunk

    def learn(
        self, document_id: str, *, chunk_ids: list[int] | None = None, infer: bool | None = None
    ) -> JSON:
        """Learn the document's facts as memories, each citing the chunk it came from."""
        json = _http.body(chunk_ids=chunk_ids, infer=infer)
        return self._client._call("documents.learn", path={"id": document_id}, json=json)

    def refs(self, memory_id: str) -> JSON:
        """The document chunks a memory cites (`document_refs`)."""
        return self._client._call("documents.refs", path={"id": memory_id})

    def cite(
        self,
        memory_id: str,
        chunk_id: int,
        *,
        quote: str | None = None,
        relation: str | None = None,
        quote_start: int | None = None,
        quote_end: int | None = None,
    ) -> JSON:
        """Record that a memory cites a chunk (optionally the words it quotes)."""
        json = _http.body(
            chunk_id=chunk_id,
            quote=quote,
            relation=relation,
            quote_start=quote_start,
            quote_end=quote_end,
        )
        return self._client._call("documents.cite", path={"id": memory_id}, json=json)

    def uncite(self, memory_id: str, chunk_id: int) -> None:
        """Remove a memory's reference to a chunk."""
        self._client._call("documents.uncite", path={"id": memory_id, "chunk_id": chunk_id})
