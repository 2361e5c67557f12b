"""Where memories meet the graph: names given on store, extraction, and linking.

`memories_stored` is the one hook memory writes call (lazily imported, so the memories app
does not depend on this one at import time)."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from uuid import UUID

from django.conf import settings
from django.db import transaction

from entities.models import Entity, EntityMemory, EntityType, Relation
from entities.services.entities import EntitySpec, entities_resolve, entity_embedding_text
from entities.services.extraction import Extraction, extract, extract_offline
from entities.services.relations import (
    RelationSpec,
    relation_upsert,
    relations_close_matching,
)
from memories.models import Memory
from memories.services.embedding import prefetched_embeddings
from memoryplatform.lib.errors import InvalidInput
from tenants.models import Project

logger = logging.getLogger(__name__)

NAMED_RELEVANCE = 1.0  # the caller said the memory is about this entity
EXTRACTED_RELEVANCE = 0.8
EXTRACTED_STRENGTH = 0.5
EXTRACTED_CONFIDENCE = {"llm": 0.9, "offline": 0.7}
CONTEXT_CHARS = 500


def memory_entities_link(
    *, project: Project, memory: Memory, entities: list[Entity], relevance: float
) -> None:
    """Associate `memory` with `entities`; an existing link keeps the higher relevance."""
    for entity in {entity.pk: entity for entity in entities}.values():
        link, created = EntityMemory.objects.get_or_create(
            project=project, entity=entity, memory=memory, defaults={"relevance": relevance}
        )
        if not created and link.relevance < relevance:
            link.relevance = relevance
            link.save(update_fields=["relevance"])


def memory_link_entity_names(*, project: Project, memory: Memory, names: list[str]) -> list:
    """`entity_names` on store: each name resolves to an entity (created `unknown` if new)."""
    specs = [EntitySpec(name=name) for name in names]
    try:
        entities = entities_resolve(project=project, specs=specs)
    except InvalidInput as exc:
        raise InvalidInput(exc.message, fields={"entity_names": [exc.message]}) from exc
    memory_entities_link(
        project=project, memory=memory, entities=entities, relevance=NAMED_RELEVANCE
    )
    return entities


def memories_stored(*, project: Project, stored: list[tuple[Memory, bool, list[str]]]) -> None:
    """Called by memory writes for each (memory, created, entity_names): link the names now,
    extract entities and relations from new memories (inline or as a job, per settings)."""
    for memory, _created, names in stored:
        if names:
            memory_link_entity_names(project=project, memory=memory, names=names)
    new_ids = [memory.pk for memory, created, _names in stored if created]
    if new_ids:
        _schedule_extraction(project, new_ids)


def _extraction_mode() -> str:
    mode = settings.MEMORY_GRAPH_EXTRACTION
    if mode == "auto":
        from memoryplatform.llm import get_llm

        return "sync" if get_llm() is None else "async"
    return str(mode)


def _schedule_extraction(project: Project, memory_ids: list[UUID]) -> None:
    match _extraction_mode():
        case "off":
            return
        case "async":
            for memory_id in memory_ids:
                transaction.on_commit(partial(_enqueue, project.pk, str(memory_id)))
        case _:
            with _entity_vectors_prefetched(project, memory_ids):
                for memory_id in memory_ids:
                    _extract_quietly(project, memory_id)


def _entity_vectors_prefetched(project: Project, memory_ids: list[UUID]) -> AbstractContextManager:
    """A bulk write's offline extraction embeds its entity names in one batch, not memory by
    memory (the LLM extractor is not called twice for this: it runs as a job anyway)."""
    from memoryplatform.llm import get_llm

    if len(memory_ids) < 2 or get_llm() is not None:
        return nullcontext()
    contents = (
        Memory.objects.for_project(project)
        .filter(pk__in=memory_ids)
        .values_list("content", flat=True)
    )
    texts = []
    for content in contents:
        extraction = extract_offline(content)
        specs = [EntitySpec(e.name, e.entity_type, e.description) for e in extraction.entities]
        specs += [EntitySpec(name) for r in extraction.relations for name in (r.source, r.target)]
        for spec in specs:
            try:
                texts.append(entity_embedding_text(spec.cleaned()))
            except InvalidInput:  # resolution will refuse it; nothing to prefetch
                continue
    return prefetched_embeddings(texts)


def _enqueue(project_id: int, memory_id: str) -> None:
    from django_q.tasks import async_task

    async_task("entities.tasks.extract_memory_graph", project_id, memory_id)


def _extract_quietly(project: Project, memory_id: UUID) -> None:
    """Extraction must never lose a memory: a failure rolls back only the graph changes."""
    try:
        with transaction.atomic():
            memory_graph_extract(project=project, memory_id=memory_id)
    except Exception:
        logger.exception("graph extraction failed for memory %s", memory_id)


@dataclass
class GraphChanges:
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    closed: list[Relation] = field(default_factory=list)
    extractor: str = "offline"


@transaction.atomic
def memory_graph_extract(*, project: Project, memory_id: UUID | str) -> GraphChanges | None:
    """Extract entities and relations from one live memory and merge them into the graph."""
    memory = Memory.objects.for_project(project).alive().filter(pk=memory_id).first()
    if memory is None:
        return None
    return graph_apply(project=project, extraction=extract(memory.content), memory=memory)


@transaction.atomic
def graph_apply(
    *, project: Project, extraction: Extraction, memory: Memory | None = None
) -> GraphChanges:
    """Merge an extraction: resolve entities (dedup, near-duplicate merge), link the memory,
    upsert (reinforce) stated relations and close retracted ones."""
    specs = [EntitySpec(e.name, e.entity_type, e.description) for e in extraction.entities]
    known = {spec.name.casefold() for spec in specs}
    for relation in extraction.relations:
        for name in (relation.source, relation.target):
            if name.casefold() not in known:
                specs.append(EntitySpec(name, EntityType.UNKNOWN))
                known.add(name.casefold())
    entities = entities_resolve(project=project, specs=specs)
    by_name = {spec.name.casefold(): entity for spec, entity in zip(specs, entities, strict=True)}
    changes = GraphChanges(entities=list({e.pk: e for e in entities}.values()))
    changes.extractor = extraction.extractor
    if memory is not None:
        memory_entities_link(
            project=project, memory=memory, entities=entities, relevance=EXTRACTED_RELEVANCE
        )
    for relation in extraction.relations:
        source, target = by_name[relation.source.casefold()], by_name[relation.target.casefold()]
        if source.pk == target.pk:
            continue
        if relation.retracted:
            changes.closed += relations_close_matching(
                project=project, source=source, target=target, relation_type=relation.relation_type
            )
            continue
        spec = _extracted_spec(relation.relation_type, extraction.extractor, memory)
        try:
            result = relation_upsert(
                project=project, source=source, target=target, spec=spec, reinforce=True
            )
        except InvalidInput as exc:  # an LLM's odd relation name skips that relation only
            logger.info("skipped extracted relation %s: %s", relation, exc.message)
            continue
        changes.relations.append(result.relation)
        changes.closed += result.closed
    return changes


def _extracted_spec(relation_type: str, extractor: str, memory: Memory | None) -> RelationSpec:
    return RelationSpec(
        relation_type=relation_type,
        strength=EXTRACTED_STRENGTH,
        confidence=EXTRACTED_CONFIDENCE.get(extractor, 0.7),
        context=memory.content[:CONTEXT_CHARS] if memory else "",
        metadata={"memory_id": str(memory.pk)} if memory else {},
    )
