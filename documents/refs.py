"""Memories citing document chunks: writes, reads and their representations on both sides.

A reference ties a memory to the chunk it rests on (`cites`, written by a caller) or was
learned from (`learned_from`, written when `add` extracts facts from a document's chunk,
`document_learn`), optionally with the quoted words and their span in the chunk. A memory's
single read lists the chunks it cites (the `memory_details` hook); a document's read and its
chunk pages list the memories citing them. Deleting the memory or the document deletes the
reference with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db import transaction

from documents.models import Document, DocumentChunk, MemoryRef
from documents.selectors.documents import document_get
from memories.memory_scope import Scope
from memories.models import Memory
from memories.selectors.memories import memory_get
from memories.services.content import capped_text
from memories.services.fact_extraction.pipeline import memories_add
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput, NotFound, check_choice
from platformcore.llm import get_llm
from tenants.models import Project

RELATIONS = ["cites", "learned_from"]
MAX_QUOTE = 2000
MAX_SHOWN = 100  # references listed with one memory, document or chunk page


# --- writes --------------------------------------------------------------------------


@dataclass(frozen=True)
class RefInput:
    chunk_id: Any
    relation: str = "cites"
    quote: str = ""
    quote_start: int | None = None
    quote_end: int | None = None
    score: float | None = None


@transaction.atomic
def memory_ref_create(*, project: Project, memory_id: UUID | str, ref: RefInput) -> MemoryRef:
    """Record that a live memory cites a chunk of the project; citing the same chunk again
    updates the quote and relation of the existing reference."""
    memory = memory_get(project=project, memory_id=memory_id)
    chunk = _chunk(project, ref.chunk_id)
    check_choice("relation", ref.relation, RELATIONS)
    quote = capped_text("quote", ref.quote or "", MAX_QUOTE)
    start, end = _span(ref, chunk, quote)
    values = {
        "relation": ref.relation,
        "quote": quote,
        "quote_start": start,
        "quote_end": end,
        "score": ref.score,
        "document_id": chunk.document_id,
    }
    found, _ = MemoryRef.objects.update_or_create(
        project=project, memory=memory, chunk=chunk, defaults=values
    )
    return found


@transaction.atomic
def memory_ref_delete(*, project: Project, memory_id: UUID | str, chunk_id: Any) -> int:
    memory = memory_get(project=project, memory_id=memory_id)
    deleted = MemoryRef.objects.filter(
        project=project, memory=memory, chunk_id=_chunk_pk(chunk_id)
    ).delete()[0]
    if not deleted:
        raise NotFound("this memory does not cite this chunk")
    return deleted


def _chunk_pk(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        raise InvalidInput("chunk_id must be a chunk's id", fields={"chunk_id": ["an integer"]})
    return int(value)


def _chunk(project: Project, chunk_id: Any) -> DocumentChunk:
    chunk = (
        DocumentChunk.objects.filter(project=project, pk=_chunk_pk(chunk_id))
        .defer("embedding", "search_vector")
        .first()
    )
    if chunk is None:
        raise InvalidInput("no such chunk in this project", fields={"chunk_id": ["not found"]})
    return chunk


def _span(ref: RefInput, chunk: DocumentChunk, quote: str) -> tuple[int | None, int | None]:
    """The quote's [start, end) in the chunk: as given (checked), else found in its text."""
    if ref.quote_start is None and ref.quote_end is None:
        found = chunk.content.find(quote) if quote else -1
        return (found, found + len(quote)) if found >= 0 else (None, None)
    start, end = ref.quote_start, ref.quote_end
    length = len(chunk.content)
    valid = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
    if not valid or not 0 <= start <= end <= length:  # type: ignore[operator]
        message = f"0 <= quote_start <= quote_end <= {length} (the chunk's length)"
        raise InvalidInput(message, fields={"quote_start": [message], "quote_end": [message]})
    return start, end


def memories_learned(*, project: Project, memory_ids: list[Any], origin: dict[str, Any]) -> int:
    """The `memories_learned` hook: `add` learned these memories from `origin`; a chunk
    origin (`{"chunk_id": ...}`) becomes a `learned_from` reference of each."""
    chunk_id = origin.get("chunk_id") if isinstance(origin, dict) else None
    if chunk_id is None:
        return 0
    chunk = _chunk(project, chunk_id)
    live = Memory.objects.for_project(project).alive().filter(pk__in=memory_ids)
    for memory_id in live.values_list("pk", flat=True):
        MemoryRef.objects.get_or_create(
            project=project,
            memory_id=memory_id,
            chunk=chunk,
            defaults={"document_id": chunk.document_id, "relation": "learned_from"},
        )
    return len(memory_ids)


def document_learn(
    *,
    project: Project,
    document_id: UUID | str,
    actor: Actor,
    chunk_ids: list[Any] | None = None,
    infer: bool | None = None,
) -> dict[str, Any]:
    """Run `add` over the document's chunks (all, or `chunk_ids`) in the document's scope:
    what it learns is stored as `documentary` memories (or matched to existing ones), each
    with a `learned_from` reference to its chunk. `infer` (default: when an LLM is
    configured) extracts facts; without it each chunk's passage is stored as it is, since
    the offline extractor keeps only what a user says of themselves or of someone named,
    which a document's impersonal prose rarely is. One transaction per chunk, as `add`
    itself; returns the events per chunk."""
    document = document_get(project=project, document_id=document_id)
    chunks = DocumentChunk.objects.filter(project=project, document=document).order_by("ordinal")
    if chunk_ids is not None:
        chunks = chunks.filter(pk__in=[_chunk_pk(value) for value in chunk_ids])
    results = []
    if infer is None:
        infer = get_llm() is not None
    for chunk in chunks.only("pk", "content", "page", "ordinal"):
        added = memories_add(
            project=project,
            messages=chunk.content,
            scope=Scope.of(document),
            actor=actor,
            metadata={"document_id": str(document.pk)},
            infer=infer,
            origin={"chunk_id": chunk.pk},
        )
        results.append({"chunk_id": chunk.pk, "page": chunk.page, **added})
    return {"document_id": str(document.pk), "chunks": results}


# --- reads and representations ---------------------------------------------------------


def memory_details(*, project: Project, memory: Memory) -> dict[str, Any]:
    """The `memory_details` hook: the chunks a memory cites, with document and page."""
    refs = (
        MemoryRef.objects.filter(project=project, memory=memory)
        .select_related("chunk", "document")
        .defer("chunk__embedding", "chunk__search_vector", "chunk__content")
        .order_by("created_at", "id")[:MAX_SHOWN]
    )
    return {"document_refs": [cited_chunk_body(ref) for ref in refs]}


def cited_chunk_body(ref: MemoryRef) -> dict[str, Any]:
    """A reference as a memory shows it: the chunk and its document."""
    return {
        "chunk_id": ref.chunk_id,
        "document_id": str(ref.document_id),
        "document_title": ref.document.title,
        "page": ref.chunk.page,
        "ordinal": ref.chunk.ordinal,
        "heading_path": list(ref.chunk.heading_path),
        **_ref_fields(ref),
    }


def citing_memory_body(ref: MemoryRef) -> dict[str, Any]:
    """A reference as a document or chunk shows it: the memory citing it."""
    return {
        "memory_id": str(ref.memory_id),
        "content": ref.memory.content,
        "memory_type": ref.memory.memory_type,
        "layer": ref.memory.layer,
        "chunk_id": ref.chunk_id,
        **_ref_fields(ref),
    }


def _ref_fields(ref: MemoryRef) -> dict[str, Any]:
    return {
        "relation": ref.relation,
        "quote": ref.quote,
        "quote_start": ref.quote_start,
        "quote_end": ref.quote_end,
        "score": ref.score,
        "created_at": ref.created_at.isoformat(),
    }


def citing_memories(
    *, project: Project, document: Document, chunk_ids: list[int] | None = None
) -> list[dict[str, Any]]:
    """The live memories citing the document (or these of its chunks), oldest first."""
    refs = MemoryRef.objects.filter(
        project=project, document=document, memory__deleted_at__isnull=True
    )
    if chunk_ids is not None:
        refs = refs.filter(chunk_id__in=chunk_ids)
    refs = refs.select_related("memory").only(
        *[f.name for f in MemoryRef._meta.concrete_fields],
        "memory__content",
        "memory__memory_type",
        "memory__layer",
    )
    return [citing_memory_body(ref) for ref in refs.order_by("created_at", "id")[:MAX_SHOWN]]
