"""Vectors missing or from another model, in every table that stores one.

Memories, entities and document chunks each keep a vector of their text (and long memories
one of their summary). A vector is missing
when the provider failed at write time (an update re-embeds new text at once; a failure
leaves it null), and stale when the configured model is not the one recorded in
`EmbeddingSpace` (vectors of two models are not comparable). `embeddings_refresh` fills the
missing ones (with the store's model), or re-embeds every row in place (`reembed --all`);
the hourly job runs it. Moving the store to another model is embedding_switch.py's.

A table is one entry in `TABLES`: its model, the rows worth a vector, and the text of one.
Document chunks fill through documents' own service (`document_embed`), which keeps each
document's progress and status."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from typing import Any

from django.db import models, transaction
from django.db.models import Q

from documents.models import DocumentChunk
from documents.services import document_embed
from entities.models import Entity
from entities.services.entities import entity_embedding_text
from memories.embeddings import get_embedder
from memories.models import Memory
from memories.services.backfill import memories_backfill_embeddings
from memories.services.embedding import embed_or_none
from memories.services.embedding_space import (
    configured_space,
    embedding_space_record,
    recorded_space,
    same_space,
    store_embedder,
)
from platformcore.lib.bulk import update_rows
from platformcore.lib.project_scope import project_scope
from platformcore.metrics import maintenance_items
from tenants.models import Project

BATCH = 64
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddedTable:
    name: str
    model: type[models.Model]
    text_fields: tuple[str, ...]
    text: Callable[[Any], str]
    live: Q = field(default_factory=Q)
    # fill one project's missing vectors through the owning app's service instead
    fill_missing: Callable[[Project], int] | None = None
    vector: str = "embedding"  # the column that holds the vector


def _fill_memories(project: Project) -> int:
    """The project's memories lacking a vector, through the memory store's back-fill."""
    return memories_backfill_embeddings(project=project).embedded


def _fill_chunks(project: Project) -> int:
    """Each document with chunks lacking a vector, through documents' embedding service."""
    missing = DocumentChunk.objects.filter(project=project, embedding__isnull=True)
    documents = list(missing.values_list("document_id", flat=True).distinct())
    count = missing.count()
    for document_id in documents:
        document_embed(project=project, document_id=document_id)
    return count - DocumentChunk.objects.filter(project=project, embedding__isnull=True).count()


TABLES: tuple[EmbeddedTable, ...] = (
    EmbeddedTable(
        "memories",
        Memory,
        ("content",),
        lambda m: m.content,
        Q(deleted_at__isnull=True),
        fill_missing=_fill_memories,
    ),
    EmbeddedTable(
        "entities",
        Entity,
        ("name", "description"),
        lambda e: entity_embedding_text(SimpleNamespace(name=e.name, description=e.description)),  # type: ignore[arg-type]
    ),
    EmbeddedTable(
        "chunks", DocumentChunk, ("content",), lambda c: c.content, fill_missing=_fill_chunks
    ),
    EmbeddedTable(
        "memory_summaries",
        Memory,
        ("summary",),
        lambda m: m.summary,
        Q(deleted_at__isnull=True) & ~Q(summary=""),
        vector="summary_embedding",
    ),
)


@dataclass
class RefreshReport:
    model_changed: bool
    embedded: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    space_recorded: bool = False
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def model_changed() -> bool:
    """The configured embedding model is not the one the stored vectors come from."""
    recorded = recorded_space()
    return recorded is not None and not same_space(recorded, configured_space())


def _embeds_as_stored() -> bool:
    """This process embeds with the model the stored vectors come from: the configured one
    (not changed), or the one a live switch moved the store to (followed)."""
    return not model_changed() or store_embedder() is not get_embedder()


def embeddings_refresh(
    *,
    projects: list[Project] | None = None,
    everything: bool | None = None,
    progress: Callable[[str, int], object] | None = None,
) -> RefreshReport:
    """Fill missing vectors, or re-embed every row (`everything`; by default, when the model
    changed) of each project (all of them unless given), each project under its own scope.
    A complete, failure-free re-embedding of every project records the configured model."""
    started = time.perf_counter()
    changed = model_changed()
    if not _embeds_as_stored():
        # vectors of the configured model would not compare with the stored ones: moving
        # the store is `manage.py reembed` (a live switch), never a job's in-place rewrite
        logger.warning("stored vectors come from another model; run manage.py reembed")
        return RefreshReport(model_changed=changed)
    everything = bool(everything)
    report = RefreshReport(model_changed=changed)
    every_project = projects is None
    for project in projects if projects is not None else list(Project.objects.order_by("pk")):
        with project_scope(project.pk):
            for table in TABLES:
                done, failed = _refresh(table, project, everything=everything, progress=progress)
                report.embedded[table.name] = report.embedded.get(table.name, 0) + done
                report.failed[table.name] = report.failed.get(table.name, 0) + failed
    if everything and every_project and not changed and not any(report.failed.values()):
        embedding_space_record()
        report.space_recorded = True
    report.seconds = round(time.perf_counter() - started, 3)
    for table, count in report.embedded.items():
        maintenance_items("reembed", table, count)
    return report


def _refresh(
    table: EmbeddedTable,
    project: Project,
    *,
    everything: bool,
    progress: Callable[[str, int], object] | None,
) -> tuple[int, int]:
    if not everything and table.fill_missing is not None:
        done = table.fill_missing(project)
        if progress and done:
            progress(table.name, done)
        return done, 0
    rows = table.model._default_manager.filter(table.live, project=project)
    if not everything:
        rows = rows.filter(**{f"{table.vector}__isnull": True})
    done = failed = 0
    last = None
    while True:
        page = rows.order_by("pk") if last is None else rows.order_by("pk").filter(pk__gt=last)
        batch = list(page.only("pk", *table.text_fields)[:BATCH])
        if not batch:
            return done, failed
        last = batch[-1].pk
        embedded = _embed_batch(table, batch)
        done, failed = done + embedded, failed + len(batch) - embedded
        if progress:
            progress(table.name, len(batch))


@transaction.atomic
def _embed_batch(table: EmbeddedTable, batch: list[Any]) -> int:
    vectors = embed_or_none([table.text(row) for row in batch])
    ready = []
    for row, vector in zip(batch, vectors, strict=True):
        if vector is not None:
            setattr(row, table.vector, vector)
            ready.append(row)
    update_rows(ready, [table.vector])
    return len(ready)
