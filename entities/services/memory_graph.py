"""Where memories meet the graph: names given on store, extraction, and linking.

`memories_stored` is the one hook memory writes call (lazily imported, so the memories app
does not depend on this one at import time). Everything here is set-wise, so a bulk write of
hundreds of memories costs a handful of statements, not a dozen per memory: one resolution
of all the batch's entities (`resolution.py`), one INSERT for all the memory links, one pass
over all the relations (`relations_bulk.py`). One memory is a batch of one.

A memory's entities and relations belong to its user's graph (entities.scope,
`memory_graph_scope`): a memory of `user_id=alice` builds Alice's graph, reusing project-wide
entities but never another user's, as mem0's graph memory is per user. A memory without a
user builds the project-wide graph."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from psycopg.pq import TransactionStatus

from entities.models import Entity, EntityMemory, EntityType, Relation
from entities.scope import GraphScope, memory_graph_scope
from entities.services.entities import EntitySpec
from entities.services.graph_extraction import Extraction, extract
from entities.services.relations import RelationSpec, check_relation_type
from entities.services.relations_bulk import RelationMention, relations_reinforce_bulk
from entities.services.resolution import entities_resolve_groups
from memories.models import ContradictionReview, Memory
from memories.services.contradictions import Verdict, contradiction_record
from memories.tasks import enqueue
from platformcore.lib.after_response import after_response, collecting
from platformcore.lib.db_outage import is_db_outage
from platformcore.lib.errors import InvalidInput
from platformcore.llm import get_llm
from tenants.models import Project

logger = logging.getLogger(__name__)

NAMED_RELEVANCE = 1.0  # the caller said the memory is about this entity
EXTRACTED_RELEVANCE = 0.8
EXTRACTED_STRENGTH = 0.5
EXTRACTED_CONFIDENCE = {"llm": 0.9, "offline": 0.7}
CONTEXT_CHARS = 500

# Links in one statement; a link that exists keeps the higher relevance (and is not rewritten
# when it already has it). The same statement counts the mentions: each new link adds one to
# its entity's `mention_count` (an increment in SQL, so concurrent writers never lose one),
# sets `first_seen` once and moves `last_seen`; the entities are locked in id order first,
# so two writers touching the same entities cannot deadlock.
_LINK_SQL = f"""
WITH linked AS (
    INSERT INTO {EntityMemory._meta.db_table} AS link
        (project_id, entity_id, memory_id, relevance, created_at)
    SELECT %(project)s, t.entity_id, t.memory_id, t.relevance, %(now)s
    FROM unnest(%(entities)s::bigint[], %(memories)s::uuid[], %(relevances)s::float8[])
        AS t(entity_id, memory_id, relevance)
    ON CONFLICT (project_id, entity_id, memory_id) DO UPDATE
        SET relevance = EXCLUDED.relevance WHERE link.relevance < EXCLUDED.relevance
    RETURNING link.entity_id, (link.xmax = 0) AS inserted
),
counts AS (
    SELECT entity_id, count(*) FILTER (WHERE inserted) AS n FROM linked GROUP BY entity_id
),
locked AS (
    SELECT e.id FROM {Entity._meta.db_table} e
    WHERE e.id IN (SELECT entity_id FROM counts WHERE n > 0)
    ORDER BY e.id
    FOR UPDATE
)
UPDATE {Entity._meta.db_table} e
SET mention_count = e.mention_count + c.n,
    first_seen = coalesce(e.first_seen, %(now)s),
    last_seen = greatest(e.last_seen, %(now)s)
FROM counts c JOIN locked l ON l.id = c.entity_id
WHERE e.id = c.entity_id
"""

# The same in three statements, for a Citus coordinator (platformcore/db/citus.py): Citus
# routes a statement to the project's shard when each table in it is filtered by the project,
# and runs neither an INSERT from a set-returning function nor a modifying CTE that locks rows
# any other way.
_LINK_VALUES_SQL = f"""
INSERT INTO {EntityMemory._meta.db_table} AS link
    (project_id, entity_id, memory_id, relevance, created_at)
VALUES {{rows}}
ON CONFLICT (project_id, entity_id, memory_id) DO UPDATE
    SET relevance = EXCLUDED.relevance WHERE link.relevance < EXCLUDED.relevance
RETURNING link.entity_id, (link.xmax = 0) AS inserted
"""
_LOCK_ENTITIES_SQL = f"""
SELECT id FROM {Entity._meta.db_table}
WHERE project_id = %(project)s AND id = ANY(%(ids)s) ORDER BY id FOR UPDATE
"""
_COUNT_MENTIONS_SQL = f"""
UPDATE {Entity._meta.db_table} e
SET mention_count = e.mention_count + c.n,
    first_seen = coalesce(e.first_seen, %(now)s),
    last_seen = greatest(e.last_seen, %(now)s)
FROM unnest(%(ids)s::bigint[], %(counts)s::integer[]) AS c(entity_id, n)
WHERE e.project_id = %(project)s AND e.id = c.entity_id
"""

Link = tuple[UUID, int, float]  # (memory id, entity id, relevance)


def entity_memories_link(*, project: Project, links: list[Link]) -> None:
    """Associate memories with entities in one statement; an existing link keeps the higher
    relevance."""
    best: dict[tuple[UUID, int], float] = {}
    for memory_id, entity_id, relevance in links:
        best[(memory_id, entity_id)] = max(relevance, best.get((memory_id, entity_id), 0.0))
    if not best:
        return
    params: dict[str, Any] = {
        "project": project.pk,
        "now": timezone.now(),
        "entities": [entity_id for _memory_id, entity_id in best],
        "memories": [memory_id for memory_id, _entity_id in best],
        "relevances": list(best.values()),
    }
    if getattr(connection, "is_citus", False):
        _link_in_steps(params)
        return
    with connection.cursor() as cursor:
        cursor.execute(_LINK_SQL, params)


def _link_in_steps(params: dict[str, Any]) -> None:
    """_LINK_SQL's work in three statements (on Citus)."""
    rows = list(zip(params["entities"], params["memories"], params["relevances"], strict=True))
    values: list[Any] = []
    for entity_id, memory_id, relevance in rows:
        values += [params["project"], entity_id, memory_id, relevance, params["now"]]
    sql = _LINK_VALUES_SQL.format(rows=", ".join(["(%s, %s, %s, %s, %s)"] * len(rows)))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, values)
        counts: dict[int, int] = {}
        for entity_id, inserted in cursor.fetchall():
            counts[entity_id] = counts.get(entity_id, 0) + (1 if inserted else 0)
        ids = sorted(entity_id for entity_id, n in counts.items() if n > 0)
        if not ids:
            return
        cursor.execute(_LOCK_ENTITIES_SQL, {"project": params["project"], "ids": ids})
        cursor.execute(
            _COUNT_MENTIONS_SQL,
            {**params, "ids": ids, "counts": [counts[entity_id] for entity_id in ids]},
        )


def memory_entities_link(
    *, project: Project, memory: Memory, entities: list[Entity], relevance: float
) -> None:
    """Associate `memory` with `entities`; an existing link keeps the higher relevance."""
    links = [(memory.pk, entity.pk, relevance) for entity in entities]
    entity_memories_link(project=project, links=links)


def memories_stored(*, project: Project, stored: list[tuple[Memory, bool, list[str]]]) -> None:
    """Called by memory writes with (memory, created, entity_names) for each memory: link the
    names, extract entities and relations from new memories (inline or as a job, per
    settings). Inline, the whole write is one set-wise graph update, memory after memory as
    single writes would do it: the names of a memory, then its extraction."""
    named = {
        i: _named_plan(project, memory, names)
        for i, (memory, _, names) in enumerate(stored)
        if names
    }
    new = [memory for memory, created, _names in stored if created]
    extracted = _extract_inline(project, new) if new else {}
    plans: list[_Plan] = []
    for index, (memory, _created, _names) in enumerate(stored):
        plans += [named[index]] if index in named else []
        plans += [extracted.pop(memory.pk)] if memory.pk in extracted else []
    if plans:
        _apply_stored(project, plans)


def _named_plan(project: Project, memory: Memory, names: list[str]) -> _Plan:
    """`entity_names` on store: each name resolves to an entity (created `unknown` if new)."""
    scope = memory_graph_scope(project, memory)
    try:
        specs = [EntitySpec(name=name, scope=scope).cleaned(project=project) for name in names]
    except InvalidInput as exc:
        raise InvalidInput(exc.message, fields={"entity_names": [exc.message]}) from exc
    return _Plan(memory=memory, named=True, names=[n.casefold() for n in names], specs=specs)


def _extraction_mode() -> str:
    """off, async (a job per memory), sync (in the write's transaction), or auto: the LLM
    extractor as a job, the offline one after the answer of an API request and in the
    write's transaction anywhere else (platformcore/lib/after_response.py)."""
    mode = settings.MEMORY_GRAPH_EXTRACTION
    if mode == "auto":
        return "auto" if get_llm() is None else "async"
    return str(mode)


def _extract_inline(project: Project, new: list[Memory]) -> dict[UUID, _Plan]:
    """The checked extraction of each memory this write inserted (live: it has just been
    written) when extraction runs inline; otherwise the memories are queued for the job or
    for after the response (or left alone) and there is nothing to apply now."""
    match _extraction_mode():
        case "off":
            return {}
        case "async":
            for memory in new:
                enqueue("entities.tasks.extract_memory_graph", project.pk, str(memory.pk))
            return {}
        case "auto" if collecting():
            after_response(lambda: _extract_after_response(project, new))
            return {}
        case _:
            plans = {memory.pk: _extracted_plan(project, memory) for memory in new}
            return {pk: plan for pk, plan in plans.items() if plan is not None}


def _extract_after_response(project: Project, new: list[Memory]) -> None:
    """The offline extraction of an API write's new memories, once its answer is sent: those
    still live (a write that rolled back, or a memory deleted since, has nothing to extract),
    in the order they were written, as one set-wise graph update."""
    ids = [memory.pk for memory in new]
    live = set(
        Memory.objects.for_project(project).alive().filter(pk__in=ids).values_list("pk", flat=True)
    )
    extracted = (_extracted_plan(project, memory) for memory in new if memory.pk in live)
    plans = [plan for plan in extracted if plan is not None]
    if plans:
        _apply_stored(project, plans)


def _extracted_plan(project: Project, memory: Memory) -> _Plan | None:
    """A failing extractor, or an extraction naming something invalid (a name over 255
    characters), costs this memory its graph, never the memory or the batch."""
    try:
        return _plan(project, extract(memory.content, self_name=_self_name(memory)), memory)
    except InvalidInput as exc:
        logger.warning("graph extraction skipped for memory %s: %s", memory.pk, exc.message)
    except Exception as exc:
        if _write_lost(exc):  # an error that aborted the write's transaction fails the write
            raise
        logger.exception("graph extraction failed for memory %s", memory.pk)
    return None


def _apply_stored(project: Project, plans: list[_Plan]) -> None:
    """Extraction must never lose a memory: a failure rolls back only the graph changes. If
    the batch fails as a whole, the names are linked on their own (a failure there fails the
    write, as it always has) and each memory's extraction gets its own try. A failure that
    took the write's transaction with it (the connection lost, the savepoint not rolled back)
    fails the write: swallowed, the write would be rolled back in silence at the end of its
    atomic block and answered as stored."""
    extracted = [plan for plan in plans if not plan.named]
    if not extracted:
        _apply_plans(project, plans)
        return
    try:
        with transaction.atomic():
            _apply_plans(project, plans)
    except Exception as exc:
        if _write_lost(exc):
            raise
        logger.exception("graph update failed for %d memories; retrying one by one", len(plans))
        if len(plans) > 1:
            _apply_plans(project, [plan for plan in plans if plan.named])
            for plan in extracted:
                _apply_quietly(project, plan)


def _apply_quietly(project: Project, plan: _Plan) -> None:
    try:
        with transaction.atomic():
            _apply_plans(project, [plan])
    except Exception as exc:
        if _write_lost(exc):
            raise
        logger.exception("graph extraction failed for memory %s", getattr(plan.memory, "pk", None))


def _write_lost(exc: BaseException) -> bool:
    """Whether a failure of the graph update took the enclosing write's transaction with it:
    the connection is gone, a savepoint could not be rolled back (Django then marks the
    transaction for rollback), or an error outside a savepoint aborted the transaction."""
    if is_db_outage(exc):
        return True
    if not connection.in_atomic_block:
        return False
    raw = connection.connection
    aborted = raw is not None and raw.info.transaction_status == TransactionStatus.INERROR
    return transaction.get_rollback() or aborted


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
    extraction = extract(memory.content, self_name=_self_name(memory))
    return graph_apply(project=project, extraction=extraction, memory=memory)


def _self_name(memory: Memory) -> str:
    """Who "User" in a memory's text is: its user id, as mem0's graph names the speaker."""
    return memory.user_id or "User"


@transaction.atomic
def graph_apply(
    *, project: Project, extraction: Extraction, memory: Memory | None = None
) -> GraphChanges:
    """Merge an extraction: resolve entities (dedup, near-duplicate merge), link the memory,
    upsert (reinforce) stated relations and close retracted ones. An invalid entity name or
    retracted relation type raises InvalidInput."""
    return _apply_plans(project, [_plan(project, extraction, memory)])[0]


@dataclass
class _Plan:
    """One extraction, checked before anything is written: cleaned entity specs (with the
    name each was extracted under) and the relations to state or retract."""

    memory: Memory | None
    extractor: str = ""
    scope: GraphScope = field(default_factory=GraphScope)  # whose graph it builds
    named: bool = False  # names given on store (relevance 1.0), not an extraction
    names: list[str] = field(default_factory=list)  # casefolded, as relations name them
    specs: list[EntitySpec] = field(default_factory=list)
    relations: list[tuple[str, str, RelationSpec, bool]] = field(default_factory=list)
    # (source name, target name, type) an LLM says ended: reviewed, never closed directly
    proposed_retractions: list[tuple[str, str, str]] = field(default_factory=list)


def _plan(
    project: Project,
    extraction: Extraction,
    memory: Memory | None,
    *,
    owner: Any = None,
    origin: dict[str, Any] | None = None,
    context: str = "",
) -> _Plan:
    """`owner` (a memory by default) decides whose graph it builds; `origin` and `context`
    describe a text that is not a memory in the relations it states."""
    owner = memory if owner is None else owner
    scope = memory_graph_scope(project, owner) if owner is not None else GraphScope()
    plan = _Plan(memory=memory, extractor=extraction.extractor, scope=scope)
    specs = [
        EntitySpec(e.name, e.entity_type, e.description, scope=scope) for e in extraction.entities
    ]
    known = {spec.name.casefold() for spec in specs}
    for relation in extraction.relations:
        for name in (relation.source, relation.target):
            if name.casefold() not in known:
                specs.append(EntitySpec(name, EntityType.UNKNOWN, scope=scope))
                known.add(name.casefold())
    plan.names = [spec.name.casefold() for spec in specs]
    plan.specs = [spec.cleaned(project=project) for spec in specs]
    for relation in extraction.relations:
        spec = _extracted_spec(relation.relation_type, extraction.extractor, memory)
        if origin is not None:
            spec.context, spec.metadata = context[:CONTEXT_CHARS], dict(origin)
        source, target = relation.source.casefold(), relation.target.casefold()
        if relation.retracted and extraction.extractor == "llm":
            # a model's word never closes a relation: the memories go to review instead
            plan.proposed_retractions.append((source, target, spec.relation_type))
            continue
        if relation.retracted:  # an invalid type here fails the memory, as closing would
            spec.relation_type = check_relation_type(spec.relation_type)
            plan.relations.append((source, target, spec, True))
            continue
        try:
            plan.relations.append((source, target, spec.cleaned(project=project), False))
        except InvalidInput as exc:  # an LLM's odd relation name skips that relation only
            logger.info("skipped extracted relation %s: %s", relation, exc.message)
    return plan


@dataclass(frozen=True)
class TextSource:
    """A text that is not a memory (a document's chunk) whose entities join the graph:
    `owner` has the scope fields that choose the graph (as a memory's would), `origin` is
    recorded in the metadata of the relations it states."""

    text: str
    owner: Any
    origin: dict[str, Any] = field(default_factory=dict)


def graph_from_texts(*, project: Project, sources: list[TextSource]) -> list[list[Entity]]:
    """Extract each text (the LLM's extractor when configured, else the offline one), merge
    its entities and relations into the graph as a memory's are, and return each text's
    entities in order. One text's failing extraction costs that text its entities only."""
    plans: list[_Plan | None] = []
    for source in sources:
        try:
            extraction = extract(source.text)
            plans.append(
                _plan(
                    project,
                    extraction,
                    None,
                    owner=source.owner,
                    origin=source.origin,
                    context=source.text,
                )
            )
        except InvalidInput as exc:
            logger.warning("graph extraction skipped for %s: %s", source.origin, exc.message)
            plans.append(None)
    live = [plan for plan in plans if plan is not None]
    try:
        with transaction.atomic():
            changes = iter(_apply_plans(project, live))
    except Exception as exc:
        if _write_lost(exc):
            raise
        logger.exception("graph update failed for %d texts; retrying one by one", len(live))
        changes = iter([_applied_alone(project, plan) for plan in live])
    return [next(changes).entities if plan is not None else [] for plan in plans]


def _applied_alone(project: Project, plan: _Plan) -> GraphChanges:
    try:
        with transaction.atomic():
            return _apply_plans(project, [plan])[0]
    except Exception as exc:
        if _write_lost(exc):
            raise
        logger.exception("graph extraction failed for a text")
        return GraphChanges()


def _apply_plans(project: Project, plans: list[_Plan]) -> list[GraphChanges]:
    resolved = entities_resolve_groups(project=project, groups=[plan.specs for plan in plans])
    all_changes, links, mentions, owners = [], [], [], []
    for plan, entities in zip(plans, resolved, strict=True):
        changes = GraphChanges(list({e.pk: e for e in entities}.values()), extractor=plan.extractor)
        all_changes.append(changes)
        if plan.memory is not None:
            relevance = NAMED_RELEVANCE if plan.named else EXTRACTED_RELEVANCE
            links += [(plan.memory.pk, entity.pk, relevance) for entity in entities]
        by_name = dict(zip(plan.names, entities, strict=True))
        for source_name, target_name, relation_type in plan.proposed_retractions:
            retraction_propose(
                project=project,
                source=by_name[source_name],
                target=by_name[target_name],
                relation_type=relation_type,
                memory=plan.memory,
                scope=plan.scope,
            )
        for source_name, target_name, spec, retracted in plan.relations:
            source, target = by_name[source_name], by_name[target_name]
            if source.pk != target.pk:
                mentions.append(RelationMention(source, target, spec, retracted, plan.scope))
                owners.append(changes)
    entity_memories_link(project=project, links=links)
    results = relations_reinforce_bulk(project=project, mentions=mentions)
    for changes, result in zip(owners, results, strict=True):
        if result.relation is not None:
            changes.relations.append(result.relation)
        changes.closed += result.closed
    return all_changes


def retraction_propose(
    *,
    project: Project,
    source: Entity,
    target: Entity,
    relation_type: str,
    memory: Memory | None,
    scope: GraphScope | None = None,
) -> ContradictionReview | None:
    """An LLM read `memory` as saying that an open relation ended. Closing it on the model's
    word would let a crafted memory erase the graph, so nothing is closed: the memory that
    stated the relation and `memory` go to contradiction review (detected by "llm", cue
    `retracted:<type>`), where a person or agent decides. Without such a pair it is only
    logged."""
    relation = (
        Relation.objects.for_project(project)
        .open()
        .filter((scope or GraphScope()).owned_q())
        .filter(source=source, target=target, relation_type=relation_type)
        .first()
    )
    stated_by = (relation.metadata or {}).get("memory_id") if relation is not None else None
    older = None
    if stated_by and memory is not None and str(stated_by) != str(memory.pk):
        older = Memory.objects.for_project(project).alive().filter(pk=stated_by).first()
    if older is None or memory is None:
        logger.info(
            "LLM proposed retracting %s %s %s: nothing to review", source, relation_type, target
        )
        return None
    verdict = Verdict(
        contradicts=True,
        cues=[f"retracted:{relation_type}"[:100]],
        reason=f"the model read this as ending: {source.name} {relation_type} {target.name}"[:500],
        detected_by="llm",
    )
    return contradiction_record(
        project=project, older=older, newer=memory, similarity=0.0, verdict=verdict
    )


def _extracted_spec(relation_type: str, extractor: str, memory: Memory | None) -> RelationSpec:
    return RelationSpec(
        relation_type=relation_type,
        strength=EXTRACTED_STRENGTH,
        confidence=EXTRACTED_CONFIDENCE.get(extractor, 0.7),
        context=memory.content[:CONTEXT_CHARS] if memory else "",
        metadata={"memory_id": str(memory.pk)} if memory else {},
    )


def memories_merged(*, project: Project, into: dict[UUID, UUID]) -> int:
    """Memories were merged (`into` maps each absorbed memory to its primary): the primary is
    linked to every entity of the memories it absorbed. An entity already linked to the
    primary keeps its link; otherwise the best relevance wins. Returns the links moved."""
    rows = EntityMemory.objects.filter(project=project, memory_id__in=list(into))
    have = set(
        EntityMemory.objects.filter(project=project, memory_id__in=set(into.values())).values_list(
            "memory_id", "entity_id"
        )
    )
    best: dict[tuple[UUID, Any], float] = {}
    for memory_id, entity_id, relevance in rows.values_list("memory_id", "entity_id", "relevance"):
        key = (into[memory_id], entity_id)
        if key not in have:
            best[key] = max(relevance, best.get(key, 0.0))
    EntityMemory.objects.bulk_create(
        [
            EntityMemory(project=project, entity_id=e, memory_id=m, relevance=r)
            for (m, e), r in best.items()
        ],
        ignore_conflicts=True,
    )
    rows.delete()
    return len(best)
