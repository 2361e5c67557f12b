"""Compression of archived memories: a summary in the memory, the full text kept apart.

When decay moves a memory to `archived` and its text is longer than the project's
`archive_compress_chars` (MEMORY_ARCHIVE_COMPRESS_CHARS, 400), its content becomes an
extractive summary (its leading sentences and its keywords) and the full text moves to
`MemoryArchive`. The summary stays searchable by keyword, the embedding stays that of the full
text (semantic search still finds the memory by its whole meaning), the content hash stays
the full text's (an identical write is still recognised as a duplicate). Nothing else
changes: no version, no history entry, no `updated_at` (the memory was not edited).

The full text comes back, byte for byte, when the memory leaves `archived` (read again and
re-scored by the decay job, preserved) or on request (`memory_decompress`). A memory whose
content was edited while compressed keeps the edit; its stale archive is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from uuid import UUID

from django.db import transaction
from django.db.models import QuerySet
from django.db.models.functions import Length

from memories.models import Memory, MemoryArchive, MemoryState
from memories.services.content import content_hash
from memories.services.keywords import extract_keywords
from memories.services.tuning import tuning
from platformcore.lib.bulk import update_rows
from platformcore.lib.errors import InvalidInput, NotFound, parse_uuid
from platformcore.lib.tokens import count_tokens
from tenants.models import Project

SUMMARY_CHARS = 200
BATCH = 1000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def summarize(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The leading sentences of `text` within `limit` characters (a cut at a word boundary
    when the first is longer), then its keywords."""
    lead = ""
    for sentence in _SENTENCE_END.split(text.strip()):
        if len(lead) + len(sentence) + 1 > limit:
            break
        lead = f"{lead} {sentence}".strip()
    if not lead:
        lead = text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:")
    keywords = extract_keywords(text)
    suffix = f" [archived summary; keywords: {', '.join(keywords)}]" if keywords else ""
    return f"{lead} …{suffix}"


def _compressible(project: Project) -> QuerySet[Memory] | None:
    limit = int(tuning(project, "archive_compress_chars") or 0)
    if limit <= 0:
        return None
    return (
        Memory.objects.for_project(project)
        .alive()
        .filter(state=MemoryState.ARCHIVED, compressed=False)
        .annotate(length=Length("content"))
        .filter(length__gt=limit)
    )


def memories_compress(*, project: Project) -> int:
    """Compress the project's archived memories longer than its limit; how many were."""
    candidates = _compressible(project)
    if candidates is None:
        return 0
    total = 0
    while True:
        batch = list(candidates.only("id", "content", "token_count")[:BATCH])
        if not batch:
            return total
        with transaction.atomic():
            total += _compress(project, batch)


def _compress(project: Project, memories: list[Memory]) -> int:
    archives = []
    for memory in memories:
        summary = summarize(memory.content)
        archives.append(
            MemoryArchive(
                memory=memory,
                project=project,
                content=memory.content,
                token_count=memory.token_count,
                summary_hash=content_hash(summary),
            )
        )
        memory.content, memory.token_count, memory.compressed = (
            summary,
            count_tokens(summary),
            True,
        )
    MemoryArchive.objects.filter(memory__in=memories).delete()  # a stale one, if any
    MemoryArchive.objects.bulk_create(archives)
    update_rows(memories, ["content", "token_count", "compressed"])
    return len(memories)


def memories_decompress(*, project: Project, memory_ids: Iterable[UUID]) -> int:
    """Put the full text back into these compressed memories; how many were restored."""
    memories = list(
        Memory.objects.for_project(project)
        .filter(pk__in=list(memory_ids), compressed=True)
        .select_related("archive")
        .select_for_update(of=("self",))
    )
    restored = []
    for memory in memories:
        archive = getattr(memory, "archive", None)
        if archive is not None and content_hash(memory.content) == archive.summary_hash:
            memory.content, memory.token_count = archive.content, archive.token_count
        memory.compressed = False  # an edited summary keeps its edit
        restored.append(memory)
    if restored:
        update_rows(restored, ["content", "token_count", "compressed"])
        MemoryArchive.objects.filter(memory__in=restored).delete()
    return len(restored)


def memories_decompress_revived(*, project: Project) -> int:
    """Restore the compressed memories that are no longer archived (read again, preserved)."""
    total = 0
    while True:
        ids = list(
            Memory.objects.for_project(project)
            .alive()
            .filter(compressed=True)
            .exclude(state=MemoryState.ARCHIVED)
            .values_list("pk", flat=True)[:BATCH]
        )
        if not ids:
            return total
        with transaction.atomic():
            total += memories_decompress(project=project, memory_ids=ids)


@transaction.atomic
def memory_decompress(*, project: Project, memory_id: UUID | str) -> Memory:
    """Restore one compressed memory's full text (it stays archived until read again)."""
    pk = parse_uuid(memory_id, what="memory")
    memory = Memory.objects.for_project(project).alive().filter(pk=pk).first()
    if memory is None:
        raise NotFound("memory not found")
    if not memory.compressed:
        raise InvalidInput("this memory is not compressed", fields={"id": ["not compressed"]})
    memories_decompress(project=project, memory_ids=[pk])
    memory.refresh_from_db()
    return memory
