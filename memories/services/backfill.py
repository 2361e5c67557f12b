"""Fill in missing embeddings (a provider was down at write time), or re-embed everything
after a model change. Batched: one embedding call and one UPDATE per batch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet

from memories.models import Memory
from memories.services.embedding import embed_or_none
from memories.services.embedding_space import embedding_space_record
from platformcore.lib.bulk import update_rows
from tenants.models import Project


@dataclass
class BackfillResult:
    total: int
    embedded: int = 0
    failed: int = 0
    space_recorded: bool = False


def backfill_queryset(*, project: Project | None, reembed_all: bool) -> QuerySet[Memory]:
    queryset = Memory.objects.alive()
    if project is not None:
        queryset = queryset.for_project(project)
    if not reembed_all:
        queryset = queryset.filter(embedding__isnull=True)
    return queryset


def memories_backfill_embeddings(
    *,
    project: Project | None = None,
    reembed_all: bool = False,
    batch_size: int = 64,
    progress: Callable[[int], None] | None = None,
) -> BackfillResult:
    """Embed live memories without a vector (all of them with `reembed_all`), in batches.
    A complete re-embed of every project records the configured model as the stored one."""
    queryset = backfill_queryset(project=project, reembed_all=reembed_all)
    result = BackfillResult(total=queryset.count())
    last_pk = None
    while True:
        page = queryset.order_by("pk")
        if last_pk is not None:
            page = page.filter(pk__gt=last_pk)  # keyset paging: failures are not retried forever
        batch = list(page.only("pk", "content")[:batch_size])
        if not batch:
            break
        last_pk = batch[-1].pk
        _embed_batch(batch, result)
        if progress:
            progress(len(batch))
    if reembed_all and project is None and result.failed == 0:
        embedding_space_record()
        result.space_recorded = True
    return result


@transaction.atomic
def _embed_batch(batch: list[Memory], result: BackfillResult) -> None:
    vectors = embed_or_none([memory.content for memory in batch])
    done = []
    for memory, vector in zip(batch, vectors, strict=True):
        if vector is None:
            result.failed += 1
            continue
        memory.embedding = vector
        done.append(memory)
    update_rows(done, ["embedding"])
    result.embedded += len(done)
