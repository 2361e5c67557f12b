"""Extracted relations, many at once: what `relation_upsert(..., reinforce=True)` and
`relations_close_matching` would do mention after mention, in a fixed number of statements.

The mentions are applied in order to an in-memory copy of the open relations they can touch,
so a batch ends where the one-by-one path would: a fact seen n times is reinforced n times
(capped at 1), a single-valued type (works_at, ...) closes the source's previous open relation
when the target changes, a retraction closes the relation, and a relation created and closed
inside the batch is stored closed. Each scope's graph (entities.scope) has its own open
relations: a mention reinforces or closes only relations of its own scope. Statements:

1. one query (FOR UPDATE) for the open relations of every mentioned (source, target, type)
   and, for single-valued types, every open relation of the mentioned (source, type);
2. one UPDATE for the existing relations that changed (reinforced or closed), before
3. one INSERT for the new relations (one open relation per triple: the update frees the
   triples it closes).
A concurrent insert of the same open relation makes the INSERT fail: `Conflict`, as
`relation_upsert` raises it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from entities.models import Entity, Relation
from entities.scope import SHARED, GraphScope
from entities.services.relations import (
    EXCLUSIVE_RELATION_TYPES,
    REINFORCEMENT,
    RelationSpec,
    emit_relation_created,
)
from platformcore.lib.errors import Conflict
from tenants.models import Project

# The changed existing relations in one statement (a CASE per column, as bulk_update writes
# it, costs more to build and to run than a join on the new values).
_UPDATE_SQL = f"""
UPDATE {Relation._meta.db_table} AS r
SET strength = v.strength, confidence = v.confidence, context = v.context,
    valid_to = v.valid_to, invalidated_at = v.invalidated_at, updated_at = v.updated_at
FROM unnest(%s::bigint[], %s::float8[], %s::float8[], %s::text[], %s::timestamptz[],
            %s::timestamptz[], %s::timestamptz[])
    AS v(id, strength, confidence, context, valid_to, invalidated_at, updated_at)
WHERE r.id = v.id
"""
_COLUMNS = ["pk", "strength", "confidence", "context", "valid_to", "invalidated_at", "updated_at"]

_OPEN_SQL = f"""
SELECT * FROM {Relation._meta.db_table}
WHERE project_id = %s AND valid_to IS NULL AND invalidated_at IS NULL
  AND ((source_id, target_id, relation_type) IN
         (SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[]))
       OR (source_id, relation_type) IN (SELECT * FROM unnest(%s::bigint[], %s::text[])))
ORDER BY id
FOR UPDATE
"""


@dataclass(frozen=True)
class RelationMention:
    """One extracted statement: `spec` is cleaned; `retracted` closes instead of adding."""

    source: Entity
    target: Entity
    spec: RelationSpec
    retracted: bool = False
    scope: GraphScope = SHARED  # whose graph states it


@dataclass
class MentionResult:
    relation: Relation | None  # the relation an assertion created or reinforced
    closed: list[Relation] = field(default_factory=list)


# inside a caller's transaction, no savepoint of its own: an error goes up to the caller's
# (a memory write's graph update has one: memory_graph._apply_stored)
@transaction.atomic(savepoint=False)
def relations_reinforce_bulk(
    *, project: Project, mentions: list[RelationMention]
) -> list[MentionResult]:
    """Apply extracted relation mentions in order (see the module docstring); one result per
    mention. Sources and targets are saved entities, never the same one."""
    state = _OpenRelations.load(project, mentions)
    now = timezone.now()
    results = [state.apply(mention, now) for mention in mentions]
    state.flush()
    return results


@dataclass
class _OpenRelations:
    project: Project
    open: dict[tuple[int, str, GraphScope], dict[int, Relation]] = field(default_factory=dict)
    changed: dict[int, Relation] = field(default_factory=dict)  # existing rows, by pk
    new: list[Relation] = field(default_factory=list)

    @classmethod
    def load(cls, project: Project, mentions: list[RelationMention]) -> _OpenRelations:
        state = cls(project=project)
        if not mentions:
            return state
        exclusive = [m for m in mentions if m.spec.relation_type in EXCLUSIVE_RELATION_TYPES]
        params = [
            project.pk,
            [m.source.pk for m in mentions],
            [m.target.pk for m in mentions],
            [m.spec.relation_type for m in mentions],
            [m.source.pk for m in exclusive],
            [m.spec.relation_type for m in exclusive],
        ]
        for relation in Relation.objects.raw(_OPEN_SQL, params):
            slot = state._slot(relation.source_id, relation.relation_type, GraphScope.of(relation))
            slot[relation.target_id] = relation
        return state

    def _slot(self, source_id: int, relation_type: str, scope: GraphScope) -> dict[int, Relation]:
        return self.open.setdefault((source_id, relation_type, scope), {})

    def apply(self, mention: RelationMention, now: datetime) -> MentionResult:
        spec = mention.spec
        slot = self._slot(mention.source.pk, spec.relation_type, mention.scope)
        if mention.retracted:
            stale = slot.pop(mention.target.pk, None)
            return MentionResult(None, self._close([] if stale is None else [stale], now, now))
        closed: list[Relation] = []
        if spec.valid_to is None and spec.relation_type in EXCLUSIVE_RELATION_TYPES:
            others = [slot.pop(t) for t in list(slot) if t != mention.target.pk]
            closed = self._close(others, spec.valid_from or now, now)
        existing = slot.get(mention.target.pk) if spec.valid_to is None else None
        if existing is not None:
            return MentionResult(self._reinforce(existing, spec, now), closed)
        relation = Relation(
            project=self.project,
            source=mention.source,
            target=mention.target,
            **vars(spec),
            **mention.scope.as_dict(),
        )
        self.new.append(relation)
        if spec.valid_to is None:
            slot[mention.target.pk] = relation
        return MentionResult(relation, closed)

    def _reinforce(self, relation: Relation, spec: RelationSpec, now: datetime) -> Relation:
        relation.strength = min(1.0, max(relation.strength, spec.strength) + REINFORCEMENT)
        relation.confidence = max(relation.confidence, spec.confidence)
        relation.context = spec.context or relation.context
        relation.updated_at = now
        self._touch(relation)
        return relation

    def _close(self, relations: list[Relation], at: datetime, now: datetime) -> list[Relation]:
        for relation in relations:
            relation.valid_to = max(at, relation.valid_from)
            relation.invalidated_at = now
            relation.updated_at = now
            self._touch(relation)
        return relations

    def _touch(self, relation: Relation) -> None:
        if relation.pk is not None:
            self.changed[relation.pk] = relation

    def flush(self) -> None:
        if self.changed:
            rows = self.changed.values()
            columns = [[getattr(relation, name) for relation in rows] for name in _COLUMNS]
            with connection.cursor() as cursor:
                cursor.execute(_UPDATE_SQL, columns)
        if not self.new:
            return
        try:
            with transaction.atomic():
                Relation.objects.bulk_create(self.new)
        except IntegrityError as exc:
            raise Conflict("relations were created concurrently; retry") from exc
        for relation in self.new:
            emit_relation_created(relation)
