"""Entity resolution for many specs at once: extraction batches, names given on store, bulk
creation by name.

The rules are those of `entities.py`: a spec matches an entity carrying its normalised name
as name or alias (same type first, then `unknown`, then any type for an untyped mention),
else a near duplicate (embedding similarity >= MERGE_SIMILARITY, same type or `unknown`)
that gains the name as an alias, else it creates an entity. Here the specs are resolved in
order against an in-memory copy of the entities they can touch, so each spec sees what the
earlier ones did, and the database sees a fixed number of statements however many specs:

1. one query for every entity carrying one of the names as a key (`lookup_keys && ...`);
2. one embedding batch for the names no entity carries yet;
3. one query for the near duplicates of those names (an HNSW probe each) and, when it finds
   some, one to load them; the batch's own new entities are compared in memory;
4. one INSERT for the new entities, and one UPDATE per existing entity a mention changed (an
   alias, a description, an `unknown` type upgraded: rare once a project's graph exists).

Specs carry their scope (entities.scope): a spec matches entities of its own scope and
project-wide ones, never another scope's, and a new entity is created in the spec's scope.

A group is what one call of the one-at-a-time path resolved together (the names of one
memory): inside a group, names already known are matched before new ones are created.
If a concurrent writer inserts one of the new names (same type) first, the one INSERT fails
and the new entities go one by one; a name created meanwhile is folded into the winner.
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from entities.models import Entity, EntityType
from entities.scope import SHARED, GraphScope
from entities.services.entities import (
    MERGE_SIMILARITY,
    EntitySpec,
    emit_entity_created,
    entity_embedding_text,
    entity_from_spec,
    entity_insert_or_absorb,
    entity_name_type_taken,
    fold_mention,
    normalize_name,
    pick_by_key,
)
from memories.services.embedding import embed_or_none
from platformcore.lib.bulk import update_rows
from platformcore.lib.vectors import vector_literal
from tenants.models import Project

NEAR_CANDIDATES = 3  # per new name; a few, in case an earlier spec upgraded the nearest one
MAX_DISTANCE = 1.0 - MERGE_SIMILARITY

# Near duplicates of each new name in one statement: one HNSW probe per vector, restricted to
# the spec's type or `unknown` (an untyped spec may merge into any type), of the spec's scope
# or project-wide.
_NEAR_SQL = f"""
SELECT q.i, n.id, n.distance
FROM unnest(%(indexes)s::int[], %(vectors)s::vector[], %(types)s::text[],
            %(users)s::text[], %(agents)s::text[], %(runs)s::text[]) AS q(i, v, t, u, a, r)
CROSS JOIN LATERAL (
    SELECT e.id, e.embedding <=> q.v AS distance
    FROM {Entity._meta.db_table} e
    WHERE e.project_id = %(project)s AND e.embedding IS NOT NULL
      AND (q.t = '{EntityType.UNKNOWN}' OR e.entity_type IN (q.t, '{EntityType.UNKNOWN}'))
      AND ((e.user_id IS NULL AND e.agent_id IS NULL AND e.run_id IS NULL)
           OR (e.user_id IS NOT DISTINCT FROM q.u AND e.agent_id IS NOT DISTINCT FROM q.a
               AND e.run_id IS NOT DISTINCT FROM q.r))
    ORDER BY e.embedding <=> q.v
    LIMIT %(limit)s
) n
WHERE n.distance <= %(max_distance)s
"""


# inside a caller's transaction, no savepoint of its own: an error goes up to the caller's
# (a memory write's graph update has one: memory_graph._apply_stored)
@transaction.atomic(savepoint=False)
def entities_resolve_groups(
    *, project: Project, groups: list[list[EntitySpec]]
) -> list[list[Entity]]:
    """The entity each (cleaned) spec names, group by group, as if each group had been
    resolved by its own `entities_resolve` call, in order. See the module docstring."""
    batch = _Batch.load(project, [spec for group in groups for spec in group])
    slots = [batch.resolve_group(group) for group in groups]
    batch.flush()
    return [[batch.entities[slot] for slot in group] for group in slots]


def _probe_key(spec: EntitySpec) -> tuple[str, str, GraphScope]:
    return entity_embedding_text(spec), spec.entity_type, spec.scope


def _reach(scope: GraphScope) -> tuple[GraphScope, ...]:
    """The scopes whose entities a spec of `scope` may match: its own, and the project-wide
    graph."""
    return (scope,) if scope == SHARED else (scope, SHARED)


def _typed_for(entity: Entity, spec: EntitySpec) -> bool:
    return spec.entity_type == EntityType.UNKNOWN or entity.entity_type in (
        spec.entity_type,
        EntityType.UNKNOWN,
    )


@dataclass
class _Batch:
    """The entities a batch can touch, in memory, addressed by slot and indexed by (key,
    scope): a bulk import for many users loads the same names in every user's graph, and a
    spec looks only at its own scope's and the project-wide ones."""

    project: Project
    loaded_keys: set[str]  # every entity carrying one of these keys is in `entities`
    entities: list[Entity] = field(default_factory=list)
    scopes: list[GraphScope] = field(default_factory=list)  # slot -> its entity's scope
    slot_of_pk: dict[int, int] = field(default_factory=dict)
    by_key: dict[tuple[str, GraphScope], list[int]] = field(default_factory=dict)  # oldest first
    new: list[int] = field(default_factory=list)
    dirty: dict[int, set[str]] = field(default_factory=dict)
    vectors: dict[str, list[float] | None] = field(default_factory=dict)
    # new slots' unit vectors, by scope
    unit: dict[GraphScope, dict[int, np.ndarray]] = field(default_factory=dict)
    near: dict[tuple[str, str], list[tuple[int, float]]] = field(default_factory=dict)

    @classmethod
    def load(cls, project: Project, specs: list[EntitySpec]) -> _Batch:
        keys = {normalize_name(spec.name) for spec in specs}
        batch = cls(project=project, loaded_keys=keys)
        if keys:
            scopes = SHARED.owned_q()
            for scope in {spec.scope for spec in specs} - {SHARED}:
                scopes |= scope.owned_q()
            known = (
                Entity.objects.for_project(project)
                .filter(lookup_keys__overlap=sorted(keys))
                .filter(scopes)
                .defer("embedding")
                .order_by("created_at", "id")
            )
            for entity in known:
                batch.add(entity)
        unmatched = [spec for spec in specs if batch.match(spec) is None]
        batch.embed(unmatched)
        batch.probe(unmatched)
        return batch

    def add(self, entity: Entity) -> int:
        if entity.pk is not None and entity.pk in self.slot_of_pk:
            return self.slot_of_pk[entity.pk]
        slot = len(self.entities)
        self.entities.append(entity)
        self.scopes.append(GraphScope.of(entity))
        if entity.pk is not None:
            self.slot_of_pk[entity.pk] = slot
        self._index(slot)
        return slot

    def _index(self, slot: int) -> None:
        for key in self.entities[slot].lookup_keys:
            slots = self.by_key.setdefault((key, self.scopes[slot]), [])
            if slot not in slots:
                insort(slots, slot, key=self._age)

    def _keyed(self, key: str, scope: GraphScope) -> list[int]:
        """The slots carrying `key` that a spec of `scope` may match, oldest first."""
        slots = [slot for reach in _reach(scope) for slot in self.by_key.get((key, reach), [])]
        return sorted(slots, key=self._age) if scope != SHARED else slots

    def _age(self, slot: int) -> tuple:
        entity = self.entities[slot]  # oldest first, as `_match_by_key` orders them
        return (entity.created_at, entity.pk is None, entity.pk or 0, slot)

    def embed(self, specs: list[EntitySpec]) -> None:
        texts = list(dict.fromkeys(entity_embedding_text(spec) for spec in specs))
        self.vectors = dict(zip(texts, embed_or_none(texts), strict=True))

    def probe(self, specs: list[EntitySpec]) -> None:
        """Near duplicates among the existing entities for every name that may be new."""
        probes, vectors = [], []
        for key in dict.fromkeys(map(_probe_key, specs)):
            vector = self.vectors.get(key[0])
            if vector is not None:
                probes.append(key)
                vectors.append(vector_literal(vector))
        if not probes:
            return
        params: dict[str, Any] = {
            "indexes": list(range(len(probes))),
            "vectors": vectors,
            "types": [entity_type for _text, entity_type, _scope in probes],
            "users": [scope.user_id for _text, _type, scope in probes],
            "agents": [scope.agent_id for _text, _type, scope in probes],
            "runs": [scope.run_id for _text, _type, scope in probes],
            "project": self.project.pk,
            "limit": NEAR_CANDIDATES,
            "max_distance": MAX_DISTANCE,
        }
        with connection.cursor() as cursor:
            cursor.execute(_NEAR_SQL, params)
            rows = cursor.fetchall()
        for index, pk, distance in rows:
            self.near.setdefault(probes[index], []).append((pk, float(distance)))
        missing = {pk for _index, pk, _distance in rows} - set(self.slot_of_pk)
        loaded = Entity.objects.for_project(self.project).filter(pk__in=missing)
        for entity in loaded.defer("embedding"):
            self.add(entity)

    def match(self, spec: EntitySpec) -> int | None:
        slots = self._keyed(normalize_name(spec.name), spec.scope)
        chosen = pick_by_key([self.entities[slot] for slot in slots], spec)
        if chosen is None:
            return None
        return next(slot for slot in slots if self.entities[slot] is chosen)

    def resolve_group(self, specs: list[EntitySpec]) -> list[int]:
        found: dict[int, int] = {}
        for index, spec in enumerate(specs):
            slot = self.match(spec)
            if slot is not None:
                found[index] = self.fold(slot, spec)
        for index, spec in enumerate(specs):
            if index not in found:
                found[index] = self.resolve_new(spec)
        return [found[index] for index in range(len(specs))]

    def resolve_new(self, spec: EntitySpec) -> int:
        slot = self.match(spec)  # an earlier spec may have created it already
        if slot is not None:
            return self.fold(slot, spec)
        vector = self.vectors.get(entity_embedding_text(spec))
        near = self.nearest(spec, vector) if vector is not None else None
        if near is not None:
            return self.fold(near, spec, alias=spec.name)
        slot = self.add(entity_from_spec(self.project, spec, vector))
        self.new.append(slot)
        if vector is not None:
            self.unit.setdefault(spec.scope, {})[slot] = _unit(vector)
        return slot

    def nearest(self, spec: EntitySpec, vector: list[float]) -> int | None:
        reach = _reach(spec.scope)
        stored = [
            (distance, self.slot_of_pk[pk]) for pk, distance in self.near.get(_probe_key(spec), [])
        ]
        candidates = [
            (distance, slot)
            for distance, slot in stored
            if self.scopes[slot] in reach and _typed_for(self.entities[slot], spec)
        ]
        units = [(slot, unit) for scope in reach for slot, unit in self.unit.get(scope, {}).items()]
        if units:
            query = _unit(vector)
            candidates += [
                (1.0 - float(query @ unit), slot)
                for slot, unit in units
                if _typed_for(self.entities[slot], spec)
            ]
        best = min(candidates, default=None)
        return best[1] if best is not None and best[0] <= MAX_DISTANCE else None

    def fold(self, slot: int, spec: EntitySpec, *, alias: str | None = None) -> int:
        entity = self.entities[slot]
        changed = fold_mention(entity, spec, alias=alias, type_taken=self.type_taken)
        if "lookup_keys" in changed:
            self._index(slot)
        if changed and entity.pk is not None:
            self.dirty.setdefault(slot, set()).update(changed)
        return slot

    def type_taken(self, entity: Entity, entity_type: str) -> bool:
        name, scope = entity.normalized_name, GraphScope.of(entity)
        if name not in self.loaded_keys:
            return entity_name_type_taken(entity, entity_type)
        return any(
            self.entities[slot].normalized_name == name
            and self.entities[slot].entity_type == entity_type
            for slot in self.by_key.get((name, scope), [])
        )

    def _save_changed(self) -> None:
        """One UPDATE per set of changed fields (writing only what changed, as `_absorb`)."""
        now = timezone.now()
        by_fields: dict[tuple[str, ...], list[Entity]] = {}
        for slot, changed in self.dirty.items():
            self.entities[slot].updated_at = now
            by_fields.setdefault(tuple(sorted(changed)), []).append(self.entities[slot])
        for fields, entities in by_fields.items():
            update_rows(entities, [*fields, "updated_at"])

    def flush(self) -> None:
        self._save_changed()
        fresh = [self.entities[slot] for slot in self.new]
        if not fresh:
            return
        try:
            with transaction.atomic():
                Entity.objects.bulk_create(fresh)
        except IntegrityError:  # a concurrent writer created one of these names first
            for slot in self.new:
                self.entities[slot] = _insert_one(self.project, self.entities[slot])
            return
        for entity in fresh:
            emit_entity_created(entity)


def _insert_one(project: Project, entity: Entity) -> Entity:
    spec = EntitySpec(
        name=entity.name,
        entity_type=entity.entity_type,
        description=entity.description,
        aliases=entity.aliases,
        metadata=entity.metadata,
        tags=entity.tags,
        scope=GraphScope.of(entity),
    )
    return entity_insert_or_absorb(project, spec, entity.embedding)


def _unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float64)
    return array / max(float(np.linalg.norm(array)), 1e-12)
