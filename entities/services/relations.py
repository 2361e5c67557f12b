"""Relations between entities: upsert, bulk by name, close (time-bounded), delete.

One open relation per (source, target, type): repeating it updates it (upsert). For
single-valued types (a person works at one place at a time), a new target closes the
previous open relation (`valid_to`, `invalidated_at`) instead of deleting it, so "as of"
questions still see the past. All of this happens inside one scope's graph (entities.scope):
a relation belongs to the scope it was stated in, between entities of that scope or
project-wide ones."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from entities.models import Entity, EntityType, Relation
from entities.scope import SHARED, GraphScope
from entities.services.entities import (
    EntitySpec,
    check_name,
    entities_resolve,
    normalize_name,
    parse_entity_id,
)
from memories.services.content import check_metadata
from memories.services.pii import scrub_for_storage
from platformcore.events import emit
from platformcore.lib.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    check_count,
    check_unit_interval,
)
from tenants.models import Project

_RELATION_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,99}$")
# A source holds at most one open relation of these types: a new target supersedes the old.
EXCLUSIVE_RELATION_TYPES = frozenset({"works_at", "reports_to", "located_in", "lives_in"})
REINFORCEMENT = 0.1  # strength added when an extractor sees the same fact again


def check_relation_type(value: Any) -> str:
    """Active-voice snake_case: "Works At" and "works-at" both become `works_at`."""
    if not isinstance(value, str):
        raise InvalidInput("relation_type must be a string", fields={"relation_type": ["string"]})
    cleaned = re.sub(r"[\s\-]+", "_", value.strip().casefold())
    if not _RELATION_TYPE.match(cleaned):
        raise InvalidInput(
            "relation_type must be snake_case letters, digits and underscores",
            fields={"relation_type": ["snake_case, at most 100 characters"]},
        )
    return cleaned


@dataclass
class RelationSpec:
    relation_type: str
    strength: float = 0.5
    confidence: float = 1.0
    context: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    valid_from: datetime | None = None
    valid_to: datetime | None = None

    def cleaned(self, *, project: Project) -> RelationSpec:
        """Checked, with `context` and `metadata` PII-masked as the project asks."""
        valid_from = self.valid_from or timezone.now()
        if self.valid_to is not None and self.valid_to < valid_from:
            raise InvalidInput(
                "valid_to is before valid_from", fields={"valid_to": ["before valid_from"]}
            )
        return RelationSpec(
            relation_type=check_relation_type(self.relation_type),
            strength=check_unit_interval("strength", self.strength),
            confidence=check_unit_interval("confidence", self.confidence),
            **scrub_for_storage(
                project=project,
                values={
                    "context": self.context if isinstance(self.context, str) else "",
                    "metadata": check_metadata(self.metadata or {}),
                },
            ),
            valid_from=valid_from,
            valid_to=self.valid_to,
        )


@dataclass(frozen=True)
class RelationResult:
    relation: Relation
    created: bool
    closed: list[Relation] = field(default_factory=list)


def emit_relation_created(relation: Relation) -> None:
    emit(
        project_id=relation.project_id,
        project_slug=relation.project.slug,
        type="relation_created",
        data={
            "id": relation.pk,
            "source_id": relation.source_id,
            "target_id": relation.target_id,
            "relation_type": relation.relation_type,
        },
    )


def _close(relations: list[Relation], at: datetime) -> list[Relation]:
    now = timezone.now()
    for relation in relations:
        relation.valid_to = max(at, relation.valid_from)
        relation.invalidated_at = now
        relation.updated_at = now
        relation.save(update_fields=["valid_to", "invalidated_at", "updated_at"])
    return relations


def _supersede(
    project: Project, source: Entity, target: Entity, spec: RelationSpec, scope: GraphScope
) -> list:
    if spec.valid_to is not None or spec.relation_type not in EXCLUSIVE_RELATION_TYPES:
        return []
    stale = list(
        Relation.objects.for_project(project)
        .open()
        .filter(scope.owned_q())
        .filter(source=source, relation_type=spec.relation_type)
        .exclude(target=target)
        .select_for_update()
    )
    return _close(stale, spec.valid_from or timezone.now())


@transaction.atomic
def relation_upsert(
    *,
    project: Project,
    source: Entity,
    target: Entity,
    spec: RelationSpec,
    reinforce: bool = False,
    scope: GraphScope = SHARED,
) -> RelationResult:
    """Create the relation in `scope`'s graph, or update the open one of the same (source,
    target, type) there. `reinforce` (extractors) raises the strength of a fact seen again
    instead of setting it."""
    spec = spec.cleaned(project=project)
    if source.pk == target.pk:
        raise InvalidInput(
            "an entity cannot relate to itself", fields={"target": ["same as source"]}
        )
    for field_name, entity in (("source", source), ("target", target)):
        if GraphScope.of(entity) not in (scope, SHARED):
            message = "an entity of another scope's graph"
            raise InvalidInput(message, fields={field_name: [message]})
    closed = _supersede(project, source, target, spec, scope)
    existing = None
    if spec.valid_to is None:
        existing = (
            Relation.objects.for_project(project)
            .open()
            .filter(scope.owned_q())
            .filter(source=source, target=target, relation_type=spec.relation_type)
            .select_for_update()
            .first()
        )
    if existing is not None:
        return RelationResult(_update(existing, spec, reinforce), created=False, closed=closed)
    relation = Relation(
        project=project, source=source, target=target, **vars(spec), **scope.as_dict()
    )
    try:
        with transaction.atomic():
            relation.save(force_insert=True)
    except IntegrityError as exc:
        raise Conflict("this relation was created concurrently; retry") from exc
    emit_relation_created(relation)
    return RelationResult(relation, created=True, closed=closed)


def _update(relation: Relation, spec: RelationSpec, reinforce: bool) -> Relation:
    if reinforce:
        relation.strength = min(1.0, max(relation.strength, spec.strength) + REINFORCEMENT)
        relation.confidence = max(relation.confidence, spec.confidence)
    else:
        relation.strength, relation.confidence = spec.strength, spec.confidence
        relation.metadata = {**relation.metadata, **spec.metadata}
    relation.context = spec.context or relation.context
    relation.updated_at = timezone.now()
    relation.save()
    return relation


def _entity(project: Project, entity_id: Any, field_name: str) -> Entity:
    entity = (
        Entity.objects.for_project(project)
        .filter(pk=parse_entity_id(entity_id))
        .defer("embedding")
        .first()
    )
    if entity is None:
        raise NotFound(f"entity {entity_id} not found", fields={field_name: ["not found"]})
    return entity


@transaction.atomic
def relation_create(
    *,
    project: Project,
    source_id: Any,
    target_id: Any,
    spec: RelationSpec,
    scope: GraphScope = SHARED,
) -> RelationResult:
    """A relation between two existing entities of the project, given by id, in `scope`'s
    graph (its entities must be of that scope or project-wide)."""
    source = _entity(project, source_id, "source_id")
    target = _entity(project, target_id, "target_id")
    return relation_upsert(project=project, source=source, target=target, spec=spec, scope=scope)


@dataclass
class NamedRelation:
    source: str
    target: str
    spec: RelationSpec
    source_type: str = EntityType.UNKNOWN
    target_type: str = EntityType.UNKNOWN


@transaction.atomic
def relations_create_by_name(
    *,
    project: Project,
    items: list[NamedRelation],
    reinforce: bool = False,
    scope: GraphScope = SHARED,
) -> list[RelationResult]:
    """Relations named by entity names (MCP `create_relations`) in `scope`'s graph; a name
    that matches no entity of the scope (or project-wide) creates one in the scope, typed
    `unknown` unless the item says otherwise."""
    specs = []
    for index, item in enumerate(items):
        try:
            specs += [
                EntitySpec(
                    name=check_name(item.source, "source"),
                    entity_type=item.source_type,
                    scope=scope,
                ),
                EntitySpec(
                    name=check_name(item.target, "target"),
                    entity_type=item.target_type,
                    scope=scope,
                ),
            ]
        except InvalidInput as exc:
            raise InvalidInput(
                exc.message,
                fields={f"relations.{index}.{key}": value for key, value in exc.fields.items()},
            ) from exc
    entities = entities_resolve(project=project, specs=specs)
    return [
        relation_upsert(
            project=project,
            source=entities[2 * index],
            target=entities[2 * index + 1],
            spec=item.spec,
            reinforce=reinforce,
            scope=scope,
        )
        for index, item in enumerate(items)
    ]


def _relation_for_write(project: Project, relation_id: Any) -> Relation:
    try:
        pk = int(str(relation_id))
    except ValueError as exc:
        raise NotFound("relation not found") from exc
    relation = Relation.objects.for_project(project).select_for_update().filter(pk=pk).first()
    if relation is None:
        raise NotFound("relation not found")
    return relation


@transaction.atomic
def relation_close(
    *, project: Project, relation_id: Any, valid_to: datetime | None = None
) -> Relation:
    """End a relation's validity (it stays, for history and "as of" traversal)."""
    relation = _relation_for_write(project, relation_id)
    at = valid_to or timezone.now()
    if at < relation.valid_from:
        raise InvalidInput(
            "valid_to is before valid_from", fields={"valid_to": ["before valid_from"]}
        )
    return _close([relation], at)[0]


@transaction.atomic
def relations_close_matching(
    *, project: Project, source: Entity, relation_type: str, target: Entity | None = None
) -> list[Relation]:
    """Close the open relations a retraction names ("Alice no longer works at Google")."""
    stale = (
        Relation.objects.for_project(project)
        .open()
        .filter(source=source, relation_type=check_relation_type(relation_type))
    )
    if target is not None:
        stale = stale.filter(target=target)
    return _close(list(stale.select_for_update()), timezone.now())


@transaction.atomic
def relation_delete(*, project: Project, relation_id: Any) -> None:
    _relation_for_write(project, relation_id).delete()


@transaction.atomic
def relations_delete_by_name(
    *, project: Project, items: list[dict[str, str]], scope: GraphScope | None = None
) -> int:
    """Delete relations named by (source, target, relation_type), as MCP `delete_relations`:
    of every graph, or, given a scope, of that scope's own graph only."""
    check_count("relations", items)
    relations = Relation.objects.for_project(project)
    if scope is not None:
        relations = relations.filter(scope.owned_q())
    deleted = 0
    for item in items:
        relation_type = check_relation_type(item.get("relation_type"))
        deleted += relations.filter(
            source__lookup_keys__contains=[normalize_name(str(item.get("source", "")))],
            target__lookup_keys__contains=[normalize_name(str(item.get("target", "")))],
            relation_type=relation_type,
        ).delete()[0]
    return deleted
