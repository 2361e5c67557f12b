"""Create, resolve, update and delete entities.

Two ways in: an explicit create (deduplicated by normalised name and type, as the seed asks)
and `entities_resolve`, used by everything automatic (names on a memory, bulk by name,
extraction), which also matches aliases, upgrades an `unknown` entity once its type is known,
and merges near-duplicates (embedding similarity ≥ MERGE_SIMILARITY) instead of copying."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from entities.models import (
    ENTITY_TYPE_PATTERN,
    MAX_ENTITY_TYPE_LENGTH,
    Entity,
    EntityMemory,
    EntityType,
    Relation,
)
from entities.scope import SHARED, GraphScope
from memories.services.content import check_metadata, check_tags
from memories.services.embedding import embed_or_none
from memories.services.memories import memory_delete
from memories.services.pii import scrub_for_storage
from platformcore.events import emit
from platformcore.lib.actor import Actor
from platformcore.lib.errors import Conflict, InvalidInput, NotFound
from tenants.models import Project

MERGE_SIMILARITY = 0.95
MAX_NAME_LENGTH = 255
_WHITESPACE = re.compile(r"\s+")
_ENTITY_TYPE = re.compile(ENTITY_TYPE_PATTERN)


def normalize_name(name: str) -> str:
    """What counts as "the same name": case and white space folded."""
    return _WHITESPACE.sub(" ", name).strip().casefold()


def check_name(value: Any, field_name: str = "name") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            f"{field_name} must be a non-empty string", fields={field_name: ["required"]}
        )
    name = _WHITESPACE.sub(" ", value).strip()
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(
            f"{field_name} is longer than {MAX_NAME_LENGTH} characters",
            fields={field_name: [f"at most {MAX_NAME_LENGTH} characters"]},
        )
    return name


def check_entity_type(value: Any) -> str:
    """Open: a built-in type (EntityType) or a project's own. Case and separators are
    folded ("Rock Band" is `rock_band`); what is left must be a lower-case identifier."""
    if not isinstance(value, str):
        raise InvalidInput("entity_type must be a string", fields={"entity_type": ["string"]})
    cleaned = re.sub(r"[\s\-]+", "_", value.strip().casefold())
    if not _ENTITY_TYPE.match(cleaned):
        message = (
            "a lower-case identifier (letters, digits, underscores; starting with a letter), "
            f"at most {MAX_ENTITY_TYPE_LENGTH} characters"
        )
        raise InvalidInput(f"entity_type must be {message}", fields={"entity_type": [message]})
    return cleaned


def check_entity_tags(value: Any) -> list[str]:
    return check_tags(value)


def check_aliases(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInput("aliases must be a list of strings", fields={"aliases": ["strings"]})
    return list(dict.fromkeys(check_name(item, "aliases") for item in value))


def parse_entity_id(value: Any) -> int:
    """An entity id from user input; anything malformed is simply "not found"."""
    try:
        return int(str(value))
    except (TypeError, ValueError) as exc:
        raise NotFound("entity not found") from exc


def _keys(name: str, aliases: list[str]) -> list[str]:
    return list(dict.fromkeys(normalize_name(text) for text in [name, *aliases]))


def _embedding_text(name: str, description: str) -> str:
    return f"{name}: {description}" if description else name


def entity_embedding_text(spec: EntitySpec) -> str:
    """What an entity's vector is computed from (name, and description when there is one)."""
    return _embedding_text(spec.name, spec.description)


def emit_entity_created(entity: Entity) -> None:
    emit(
        project_id=entity.project_id,
        project_slug=entity.project.slug,
        type="entity_created",
        data={
            "id": entity.pk,
            "name": entity.name,
            "entity_type": entity.entity_type,
            "user_id": entity.user_id,
        },
    )


@dataclass
class EntitySpec:
    """An entity as named by a caller or an extractor, before it is matched or created."""

    name: str
    entity_type: str = EntityType.UNKNOWN
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    scope: GraphScope = SHARED  # the graph it belongs to (entities.scope)

    def cleaned(self, *, project: Project) -> EntitySpec:
        """Checked, and PII-masked as the project asks (before it is matched or stored)."""
        texts = scrub_for_storage(
            project=project,
            values={
                "name": check_name(self.name),
                "description": self.description if isinstance(self.description, str) else "",
                "aliases": check_aliases(self.aliases or []),
                "metadata": check_metadata(self.metadata or {}),
            },
        )
        return EntitySpec(
            entity_type=check_entity_type(self.entity_type or EntityType.UNKNOWN),
            tags=check_entity_tags(self.tags or []),
            scope=self.scope,
            **texts,
        )


def entity_get_for_write(*, project: Project, entity_id: int | str) -> Entity:
    entity = (
        Entity.objects.for_project(project)
        .select_for_update()
        .filter(pk=parse_entity_id(entity_id))
        .first()
    )
    if entity is None:
        raise NotFound("entity not found")
    return entity


def entity_from_spec(project: Project, spec: EntitySpec, embedding: list[float] | None) -> Entity:
    """A new (unsaved) entity for a cleaned spec."""
    return Entity(
        project=project,
        name=spec.name,
        normalized_name=normalize_name(spec.name),
        entity_type=spec.entity_type,
        description=spec.description,
        aliases=list(spec.aliases),
        lookup_keys=_keys(spec.name, spec.aliases),
        metadata=dict(spec.metadata),
        tags=list(spec.tags),
        embedding=embedding,
        **spec.scope.as_dict(),
    )


def _insert(project: Project, spec: EntitySpec, embedding: list[float] | None) -> Entity:
    entity = entity_from_spec(project, spec, embedding)
    entity.save(force_insert=True)
    emit_entity_created(entity)
    return entity


@transaction.atomic
def entity_create(*, project: Project, spec: EntitySpec) -> tuple[Entity, bool]:
    """Create one entity with its embedding in the spec's scope; the same (name, type) in
    that scope returns the existing one."""
    spec = spec.cleaned(project=project)
    existing = _same_name_and_type(project, spec).first()
    if existing is not None:
        return _absorb(existing, spec), False
    vector = embed_or_none([_embedding_text(spec.name, spec.description)])[0]
    try:
        with transaction.atomic():
            return _insert(project, spec, vector), True
    except IntegrityError as exc:  # a concurrent create won the race
        winner = _same_name_and_type(project, spec).first()
        if winner is None:
            raise Conflict("this entity was changed concurrently; retry") from exc
        return winner, False


def _same_name_and_type(project: Project, spec: EntitySpec) -> Any:
    return (
        Entity.objects.for_project(project)
        .filter(spec.scope.owned_q())
        .filter(normalized_name=normalize_name(spec.name), entity_type=spec.entity_type)
    )


def _absorb(entity: Entity, spec: EntitySpec, *, alias: str | None = None) -> Entity:
    """Fold what a new mention adds (description, aliases, metadata, a type) into `entity`."""
    changed = fold_mention(entity, spec, alias=alias, type_taken=entity_name_type_taken)
    if changed:
        entity.updated_at = timezone.now()
        entity.save(update_fields=[*changed, "updated_at"])
    return entity


def entity_name_type_taken(entity: Entity, entity_type: str) -> bool:
    """Another entity of the entity's graph (scope) has its name with `entity_type`."""
    return (
        Entity.objects.filter(project_id=entity.project_id)
        .filter(GraphScope.of(entity).owned_q())
        .filter(normalized_name=entity.normalized_name, entity_type=entity_type)
        .exists()
    )


def fold_mention(
    entity: Entity,
    spec: EntitySpec,
    *,
    alias: str | None = None,
    type_taken: Callable[[Entity, str], bool],
) -> list[str]:
    """The rules of `_absorb` without the write (batched resolution saves once, at the end):
    changes `entity` in memory and returns the changed fields. `type_taken(entity, type)` says
    whether another entity already has this entity's name with that type (no upgrade then)."""
    changed: list[str] = []
    if spec.description and not entity.description:
        entity.description = spec.description
        changed.append("description")
    new_aliases = [
        name
        for name in [*spec.aliases, *([alias] if alias else [])]
        if normalize_name(name) not in entity.lookup_keys
    ]
    if new_aliases:
        entity.aliases = [*entity.aliases, *new_aliases]
        entity.lookup_keys = _keys(entity.name, entity.aliases)
        changed += ["aliases", "lookup_keys"]
    if spec.metadata and any(entity.metadata.get(k) != v for k, v in spec.metadata.items()):
        entity.metadata = {**entity.metadata, **spec.metadata}
        changed.append("metadata")
    new_tags = [tag for tag in spec.tags if tag not in entity.tags]
    if new_tags:
        entity.tags = [*entity.tags, *new_tags]
        changed.append("tags")
    upgrade = entity.entity_type == EntityType.UNKNOWN != spec.entity_type
    if upgrade and not type_taken(entity, spec.entity_type):
        entity.entity_type = spec.entity_type
        changed.append("entity_type")
    return changed


def _match_by_key(project: Project, spec: EntitySpec) -> Entity | None:
    candidates = list(
        Entity.objects.for_project(project)
        .filter(spec.scope.owned_q() | SHARED.owned_q())
        .filter(lookup_keys__contains=[normalize_name(spec.name)])
        .defer("embedding")
        .order_by("created_at", "id")
    )
    return pick_by_key(candidates, spec)


def pick_by_key(candidates: list[Entity], spec: EntitySpec) -> Entity | None:
    """Among the entities carrying the spec's name or alias (oldest first), those of the
    spec's own scope before project-wide ones: prefer the same type, then an `unknown` one
    (to upgrade), then, for an untyped mention, whichever typed entity carries that name."""
    own = spec.scope.as_dict()
    candidates = sorted(candidates, key=lambda e: GraphScope.of(e).as_dict() != own)
    for wanted in (spec.entity_type, EntityType.UNKNOWN):
        for entity in candidates:
            if entity.entity_type == wanted:
                return entity
    if spec.entity_type == EntityType.UNKNOWN and candidates:
        return candidates[0]
    return None


@transaction.atomic
def entities_resolve(*, project: Project, specs: list[EntitySpec]) -> list[Entity]:
    """The entity each spec names, matched by name/alias or near-duplicate embedding
    (similarity >= MERGE_SIMILARITY), created only when nothing matches. Set-wise: a handful
    of statements whatever the number of specs (see `entities.services.resolution`)."""
    from entities.services.resolution import entities_resolve_groups  # builds on this module

    cleaned = [spec.cleaned(project=project) for spec in specs]
    return entities_resolve_groups(project=project, groups=[cleaned])[0]


def entity_insert_or_absorb(
    project: Project, spec: EntitySpec, vector: list[float] | None
) -> Entity:
    """Insert one entity; if a concurrent writer inserted the same name and type first,
    fold the spec into that winner instead."""
    try:
        with transaction.atomic():
            return _insert(project, spec, vector)
    except IntegrityError:
        winner = _match_by_key(project, spec)
        if winner is None:
            raise
        return _absorb(winner, spec)


def entity_resolve(*, project: Project, spec: EntitySpec) -> Entity:
    return entities_resolve(project=project, specs=[spec])[0]


UPDATABLE_FIELDS = ("name", "entity_type", "description", "aliases", "metadata", "tags")


@transaction.atomic
def entity_update(*, project: Project, entity_id: int | str, changes: dict[str, Any]) -> Entity:
    """Change an entity; a new name or description re-embeds it."""
    unknown = sorted(set(changes) - set(UPDATABLE_FIELDS))
    if unknown:
        raise InvalidInput(
            "unknown or read-only field", fields={name: ["not updatable"] for name in unknown}
        )
    entity = entity_get_for_write(project=project, entity_id=entity_id)
    checks = {
        "name": check_name,
        "entity_type": check_entity_type,
        "aliases": check_aliases,
        "metadata": check_metadata,
        "tags": check_entity_tags,
        "description": lambda value: value if isinstance(value, str) else "",
    }
    checked = {name: checks[name](value) for name, value in changes.items()}
    tags = checked.pop("tags", None)
    if tags is not None:
        entity.tags = tags
    for name, value in scrub_for_storage(project=project, values=checked).items():
        setattr(entity, name, value)
    entity.normalized_name = normalize_name(entity.name)
    entity.lookup_keys = _keys(entity.name, entity.aliases)
    if {"name", "description"} & set(changes):
        entity.embedding = embed_or_none([_embedding_text(entity.name, entity.description)])[0]
    entity.updated_at = timezone.now()
    try:
        with transaction.atomic():
            entity.save()
    except IntegrityError as exc:
        raise Conflict(
            "another entity of its graph already has this name and type",
            fields={"name": ["an entity with this name and type exists"]},
        ) from exc
    return entity


@transaction.atomic
def entity_delete(
    *, project: Project, entity_id: int | str, actor: Actor, cascade_memories: bool = False
) -> dict[str, int]:
    """Delete an entity; its relations and memory links go with it (database cascade).
    Memories stay unless `cascade_memories`, then they are soft-deleted with history."""
    entity = entity_get_for_write(project=project, entity_id=entity_id)
    return _delete(project, [entity], actor, cascade_memories)


@transaction.atomic
def entities_delete_by_name(
    *,
    project: Project,
    names: list[str],
    actor: Actor,
    cascade_memories: bool = False,
    scope: GraphScope | None = None,
) -> dict[str, int]:
    """Delete every entity carrying one of `names` (any type), as MCP `delete_entities`:
    of every graph, or, given a scope, of that scope's own graph only."""
    keys = [normalize_name(check_name(name, "entity_names")) for name in names]
    queryset = Entity.objects.for_project(project).filter(Q(normalized_name__in=keys))
    if scope is not None:
        queryset = queryset.filter(scope.owned_q())
    entities = list(queryset.select_for_update())
    return _delete(project, entities, actor, cascade_memories)


def _delete(
    project: Project, entities: list[Entity], actor: Actor, cascade_memories: bool
) -> dict[str, int]:
    ids = [entity.pk for entity in entities]
    memory_ids = list(
        EntityMemory.objects.filter(project=project, entity_id__in=ids)
        .filter(memory__deleted_at__isnull=True)
        .values_list("memory_id", flat=True)
        .distinct()
    )
    relations = Relation.objects.filter(project=project).filter(
        Q(source_id__in=ids) | Q(target_id__in=ids)
    )
    counts = {"relations": relations.count(), "memories": 0}
    if cascade_memories:
        for memory_id in memory_ids:
            memory_delete(project=project, memory_id=memory_id, actor=actor, reason="entity")
        counts["memories"] = len(memory_ids)
    counts["entities"] = (
        Entity.objects.filter(project=project, pk__in=ids).delete()[1].get("entities.Entity", 0)
    )
    return counts
