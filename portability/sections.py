"""What an export holds: one `Section` per tenant table, in the order an import loads them.

A row travels as its model's concrete fields (the project and generated columns aside), so a
new column travels without a change here; a foreign key to another section's model is a
reference, remapped with the rows it points to. Adding a table is one entry in `SECTIONS`,
after the sections it references:

    Section("episodes", Episode),  # a UUID primary key needs no natural key

A table with an integer primary key names the fields that identify a row within its project
(`natural_key`), so that re-importing with `--remap` finds the rows a first import made.

Tenant tables left out, and why: `tenants.ApiKey` (credentials: a moved project gets new
keys), `memories.MaintenanceState` (the jobs' bookkeeping), `analytics.SearchStat` (rolling
statistics), the export jobs themselves (`portability.ExportJob`) and the live feed's
replay buffer (`platformcore.EventRecord`, which has no foreign key to the project).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.db import models
from pgvector.django import VectorField

from analytics.models import ToolFeedback
from documents.models import ChunkEntity, Document, DocumentChunk, DocumentOriginal, MemoryRef
from documents.services.originals import inline_for_export, originals_settle
from entities.models import Entity, EntityMemory, Relation, Tag
from memories.models import (
    ContradictionReview,
    Episode,
    Memory,
    MemoryArchive,
    MemoryFeedback,
    MemoryHistory,
    MemoryLink,
    ProjectPrompt,
)
from memories.services.links import legacy_link
from tenants.models import Project


def defer_vector(row: dict[str, Any]) -> None:
    """A live memory with a vector enters the HNSW graph through the indexing job, not its
    insert (what bulk writes with `vector_index: deferred` do): an import of 10,000 memories
    spent most of its time inserting into the graph, one row at a time."""
    if row.get("embedding") is not None and row.get("deleted_at") is None:
        row["vector_pending"] = True


@dataclass(frozen=True)
class Section:
    name: str
    model: type[models.Model]
    natural_key: tuple[str, ...] = ()  # attnames identifying a row (integer primary keys)
    exclude: tuple[str, ...] = ()  # attnames that never travel
    # adjusts a row's values (by attname) before it is written
    prepare: Callable[[dict[str, Any]], None] | None = None
    # maps a row as read (legacy values) to what the model takes, before it is checked
    normalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # adjusts a row's values before it goes into the file (an original's bytes read in)
    export: Callable[[dict[str, Any]], None] | None = None
    # what follows an import's commit for the project (originals moved to their storage)
    after_import: Callable[..., Any] | None = None

    @cached_property
    def fields(self) -> tuple[models.Field, ...]:
        """The columns that travel: concrete, not the project, not generated."""
        return tuple(
            field
            for field in self.model._meta.concrete_fields
            if field.name != "project"
            and not isinstance(field, models.GeneratedField)
            and field.attname not in self.exclude
        )

    @cached_property
    def by_attname(self) -> dict[str, models.Field]:
        return {field.attname: field for field in self.fields}

    @cached_property
    def pk(self) -> models.Field:
        return self.model._meta.pk

    @property
    def integer_ids(self) -> bool:
        return isinstance(self.pk, models.AutoField | models.BigAutoField)

    @cached_property
    def references(self) -> dict[str, str]:
        """attname -> the section its foreign key points to."""
        found = {}
        for field in self.fields:
            if field.is_relation and field.related_model is not Project:
                found[field.attname] = section_of(field.related_model).name
        return found

    @cached_property
    def vector_fields(self) -> tuple[str, ...]:
        return tuple(f.attname for f in self.fields if isinstance(f, VectorField))


SECTIONS: tuple[Section, ...] = (
    Section("episodes", Episode),
    Section("memories", Memory, prepare=defer_vector),
    Section("memory_history", MemoryHistory),
    Section("memory_links", MemoryLink, normalize=legacy_link),
    Section("memory_archives", MemoryArchive),
    Section("contradictions", ContradictionReview),
    Section("memory_feedback", MemoryFeedback, natural_key=("memory_id", "created_at", "actor")),
    Section(
        "entities",
        Entity,
        natural_key=("normalized_name", "entity_type", "user_id", "agent_id", "run_id"),
    ),
    Section(
        "relations", Relation, natural_key=("source_id", "target_id", "relation_type", "valid_from")
    ),
    Section("entity_memories", EntityMemory, natural_key=("entity_id", "memory_id")),
    Section("tags", Tag, natural_key=("name",)),
    Section("documents", Document),
    Section("document_chunks", DocumentChunk, natural_key=("document_id", "ordinal")),
    Section("memory_refs", MemoryRef, natural_key=("memory_id", "chunk_id")),
    Section(
        "document_originals",
        DocumentOriginal,
        export=inline_for_export,
        after_import=originals_settle,
    ),
    Section("chunk_entities", ChunkEntity, natural_key=("chunk_id", "entity_id")),
    Section("project_prompts", ProjectPrompt, natural_key=("kind", "version")),
    Section("tool_feedback", ToolFeedback, natural_key=("tool_name", "created_at", "actor")),
)
BY_NAME = {section.name: section for section in SECTIONS}

# Tenant tables deliberately not exported (see the module docstring), by model label.
LEFT_OUT = frozenset(
    {
        "tenants.ApiKey",
        "memories.MaintenanceState",
        "analytics.SearchStat",
        "portability.ExportJob",
    }
)


def section_of(model: type[models.Model]) -> Section:
    for section in SECTIONS:
        if section.model is model:
            return section
    raise LookupError(f"{model._meta.label} is referenced by an exported table but has no section")


def check_registry() -> list[str]:
    """Problems with `SECTIONS`: a reference to a later section or to a table without one, an
    integer primary key without a natural key. Empty when the registry is sound."""
    problems, seen = [], set()
    for section in SECTIONS:
        try:
            references = section.references
        except LookupError as exc:
            problems.append(f"{section.name}: {exc}")
            continue
        for attname, target in references.items():
            if target not in seen and target != section.name:
                problems.append(f"{section.name}.{attname} refers to {target}, listed after it")
        if section.integer_ids and not section.natural_key:
            problems.append(f"{section.name}: an integer primary key needs a natural_key")
        seen.add(section.name)
    return problems
