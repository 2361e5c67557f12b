"""Entities, the typed, weighted, time-bounded relations between them, and their memories."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from memories.models import EMBEDDING_DIMENSIONS, Memory
from tenants.models import Project

# Foreign keys to another tenant table are `db_constraint=False`: the database holds composite
# ones, `(x_id, project_id) -> (id, project_id)` (see the note in memories/models.py).


class EntityType(models.TextChoices):
    """The built-in types: suggested to extractors and clients, not a closed set. A project
    may use any lower-case identifier (`ENTITY_TYPE_PATTERN`), e.g. `team` or `drug`."""

    PERSON = "person"
    ORGANIZATION = "organization"
    PROJECT = "project"
    CONCEPT = "concept"
    LOCATION = "location"
    TECHNOLOGY = "technology"
    EVENT = "event"
    PRODUCT = "product"
    UNKNOWN = "unknown"


MAX_ENTITY_TYPE_LENGTH = 50
ENTITY_TYPE_PATTERN = rf"^[a-z][a-z0-9_]{{0,{MAX_ENTITY_TYPE_LENGTH - 1}}}$"
MAX_TAG_LENGTH = 100  # as memory tags

# The seed's active-voice vocabulary; any other snake_case type is accepted too.
KNOWN_RELATION_TYPES = (
    "works_at",
    "manages",
    "reports_to",
    "collaborates_with",
    "uses",
    "implements",
    "depends_on",
    "related_to",
    "located_in",
    "part_of",
    "created_by",
)


class EntityQuerySet(models.QuerySet["Entity"]):
    def for_project(self, project: Project) -> EntityQuerySet:
        return self.filter(project=project)


def _unit_interval(model: str, field: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(**{f"{field}__gte": 0.0}) & Q(**{f"{field}__lte": 1.0}),
        name=f"{model}_{field}_in_unit_interval",
    )


class Entity(models.Model):
    """A named thing memories talk about: a person, an organisation, a technology..."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="entities")
    name = models.CharField(max_length=255)
    # casefolded, white space collapsed: what "the same name" means
    normalized_name = models.CharField(max_length=255)
    # open: the built-in EntityType values or any lower-case identifier (CHECK below)
    entity_type = models.CharField(max_length=MAX_ENTITY_TYPE_LENGTH, default=EntityType.UNKNOWN)
    description = models.TextField(blank=True, default="")
    aliases = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    tags = ArrayField(models.CharField(max_length=MAX_TAG_LENGTH), default=list, blank=True)
    # whose graph: a memory's scope, or none of them for the project-wide graph (entities.scope)
    user_id = models.CharField(max_length=255, null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    run_id = models.CharField(max_length=255, null=True, blank=True)
    # memories that mention it: counted when a memory is first linked (never decremented)
    mention_count = models.PositiveIntegerField(default=0)
    first_seen = models.DateTimeField(null=True, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    # normalised name + normalised aliases, maintained by the services: one GIN lookup
    lookup_keys = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    memories = models.ManyToManyField(Memory, through="EntityMemory", related_name="entities")

    objects = EntityQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        verbose_name = "entity"
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "project",
                    "normalized_name",
                    "entity_type",
                    "user_id",
                    "agent_id",
                    "run_id",
                ],
                name="entity_unique_name_type_per_scope",
                nulls_distinct=False,
            ),
            models.CheckConstraint(
                condition=Q(entity_type__regex=ENTITY_TYPE_PATTERN), name="entity_type_identifier"
            ),
        ]
        indexes = [
            models.Index(fields=["project", "entity_type"], name="entity_project_type"),
            models.Index(fields=["project", "user_id"], name="entity_project_user"),
            GinIndex(fields=["tags"], name="entity_tags_gin"),
            GinIndex(fields=["lookup_keys"], name="entity_lookup_keys_gin"),
            GinIndex(
                fields=["normalized_name"], opclasses=["gin_trgm_ops"], name="entity_name_trgm"
            ),
            HnswIndex(
                name="entity_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.entity_type})"


class RelationQuerySet(models.QuerySet["Relation"]):
    def for_project(self, project: Project) -> RelationQuerySet:
        return self.filter(project=project)

    def open(self) -> RelationQuerySet:
        """Not closed: no end of validity and not invalidated by a later fact."""
        return self.filter(valid_to__isnull=True, invalidated_at__isnull=True)


class Relation(models.Model):
    """A directed, typed, weighted edge between two entities, valid over a period of time.

    `valid_from`/`valid_to` bound when the fact holds in the world; `invalidated_at` records
    when a contradicting fact closed it. Closed relations stay for "as of" questions."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="relations_out", db_constraint=False
    )
    target = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="relations_in", db_constraint=False
    )
    relation_type = models.CharField(max_length=100)
    strength = models.FloatField(default=0.5)
    confidence = models.FloatField(default=1.0)
    context = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    # whose graph (entities.scope): the stating memory's scope, or the project-wide graph
    user_id = models.CharField(max_length=255, null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    run_id = models.CharField(max_length=255, null=True, blank=True)
    valid_from = models.DateTimeField(default=timezone.now)
    valid_to = models.DateTimeField(null=True, blank=True)
    invalidated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = RelationQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "project",
                    "source",
                    "target",
                    "relation_type",
                    "user_id",
                    "agent_id",
                    "run_id",
                ],
                condition=Q(valid_to__isnull=True, invalidated_at__isnull=True),
                name="relation_unique_open_per_type_scope",
                nulls_distinct=False,
            ),
            models.CheckConstraint(condition=~Q(source=F("target")), name="relation_not_self"),
            _unit_interval("relation", "strength"),
            _unit_interval("relation", "confidence"),
            models.CheckConstraint(
                condition=Q(valid_to__isnull=True) | Q(valid_to__gte=F("valid_from")),
                name="relation_valid_period_ordered",
            ),
        ]
        indexes = [
            # traversal walks both ways; these carry the filters so the walk stays in the index
            models.Index(
                fields=["source", "relation_type", "strength"], name="relation_source_walk"
            ),
            models.Index(
                fields=["target", "relation_type", "strength"], name="relation_target_walk"
            ),
            models.Index(fields=["project", "relation_type"], name="relation_project_type"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.relation_type}-> {self.target_id}"


class EntityMemory(models.Model):
    """A memory mentions (is about) an entity, with a relevance in [0, 1]."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    entity = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="memory_links", db_constraint=False
    )
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="entity_links", db_constraint=False
    )
    relevance = models.FloatField(default=1.0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-relevance", "created_at", "id"]
        verbose_name = "entity memory"
        verbose_name_plural = "entity memories"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "entity", "memory"], name="entitymemory_unique_per_project"
            ),
            _unit_interval("entitymemory", "relevance"),
        ]
        indexes = [models.Index(fields=["memory"], name="entitymemory_memory")]

    def __str__(self) -> str:
        return f"{self.entity_id} ~ {self.memory_id}"


class Tag(models.Model):
    """The project's tag registry (MemorizedMCP-TS's `tags` table): a tag's description.
    Every tag in use on a memory or an entity is listed whether or not it has a row here; a
    row is written when a tag is described (entities.services.tags). Counts are computed
    from the memories and entities carrying the tag, so they never drift."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=MAX_TAG_LENGTH)
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="tag_unique_per_project"),
        ]

    def __str__(self) -> str:
        return self.name
