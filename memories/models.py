"""Memories, their audit history and the typed links between them."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Case, F, Q, When
from django.db.models.functions import Coalesce
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from tenants.models import Project
from tenants.namespaces import SHARED_AGENT, current_namespace

EMBEDDING_DIMENSIONS = 384
TEXT_SEARCH_CONFIG = "english"

# A foreign key between two tenant tables is declared `db_constraint=False`: the database holds
# a composite one instead, `(x_id, project_id) -> (id, project_id)`, so a row can only point at
# a row of its own project, and Citus can distribute both tables by project
# (memoryplatform/migrations/0002_composite_tenant_keys.py, docs/scaling.md).


class MemoryType(models.TextChoices):
    FACT = "fact"
    DECISION = "decision"
    PREFERENCE = "preference"
    ERROR = "error"
    PROCEDURE = "procedure"
    OBSERVATION = "observation"
    LEARNING = "learning"
    PATTERN = "pattern"
    RELATION = "relation"
    EPISODE = "episode"


# The importance a memory gets when its writer gives none, by type (Memento's defaults, with
# the types it lacks placed between them): what is costly to relearn (a user's preference, an
# error and its fix, a decision, a procedure) outranks and outlives a plain fact or an
# episode. Importance >= 0.8 is the permanent tier: never below dormant, never pruned.
TYPE_IMPORTANCE = {
    MemoryType.PREFERENCE: 0.95,
    MemoryType.ERROR: 0.9,
    MemoryType.DECISION: 0.8,
    MemoryType.PROCEDURE: 0.7,
    MemoryType.LEARNING: 0.6,
    MemoryType.PATTERN: 0.6,
    MemoryType.RELATION: 0.6,
    MemoryType.FACT: 0.5,
    MemoryType.OBSERVATION: 0.5,
    MemoryType.EPISODE: 0.4,
}


PERMANENT_IMPORTANCE = 0.8
# A memory's own decay rate is per day: at 1.0 its score loses 63% a day without access.
MAX_DECAY_RATE = 1.0


def default_importance(memory_type: str) -> float:
    """The importance of a memory of `memory_type` whose writer gave none."""
    return TYPE_IMPORTANCE.get(memory_type, 0.5)  # type: ignore[call-overload]


class TtlTier(models.TextChoices):
    """Memento's TTL tier, stored per memory (docs/intelligence.md, "TTL tiers"): `hot` just
    made or read, `warm` the long-term default, `cold` stale, `permanent` never demoted."""

    HOT = "hot"
    WARM = "warm"
    COLD = "cold"
    PERMANENT = "permanent"


def infer_ttl_tier(memory_type: str, importance: float) -> str:
    """A new memory's tier, as Memento's FragmentFactory infers it: a preference or importance
    >= 0.8 is permanent, an error or a procedure hot, importance >= 0.5 warm, the rest cold."""
    if memory_type == MemoryType.PREFERENCE or importance >= PERMANENT_IMPORTANCE:
        return TtlTier.PERMANENT
    if memory_type in (MemoryType.ERROR, MemoryType.PROCEDURE):
        return TtlTier.HOT
    return TtlTier.WARM if importance >= 0.5 else TtlTier.COLD


class MemoryLayer(models.TextChoices):
    """Where a memory sits in the store's layers (docs/episodes.md): short-term memories belong
    to one run and expire unless promoted; long-term ones stay; episodic ones summarise an
    episode; semantic ones are general knowledge; documentary ones were learned from a
    document."""

    SHORT_TERM = "short_term"
    LONG_TERM = "long_term"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    DOCUMENTARY = "documentary"


class Episode(models.Model):
    """A conversation or a task: the memories (and documents) stored during it, in order,
    and, once it is closed, its summary."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="episodes")
    user_id = models.CharField(max_length=255, null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    run_id = models.CharField(max_length=255, null=True, blank=True)  # the run or session
    name = models.CharField(max_length=200, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)  # None while the episode is open
    summary = models.TextField(blank=True, default="")
    summary_method = models.CharField(max_length=20, blank=True, default="")  # llm | extractive

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["project", "-started_at", "-id"], name="episode_project_started"),
        ]
        constraints = [
            # one open episode per run: the run's current episode is never ambiguous
            models.UniqueConstraint(
                fields=["project", "run_id"],
                condition=Q(ended_at__isnull=True, run_id__isnull=False),
                name="episode_one_open_per_run",
            ),
            models.CheckConstraint(
                condition=Q(user_id__isnull=False)
                | Q(agent_id__isnull=False)
                | Q(run_id__isnull=False),
                name="episode_has_scope",
            ),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gte=F("started_at")),
                name="episode_ends_after_start",
            ),
        ]

    def __str__(self) -> str:
        return self.name or str(self.pk)

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


class MemoryState(models.TextChoices):
    ACTIVE = "active"
    DORMANT = "dormant"
    ARCHIVED = "archived"
    EXPIRED = "expired"


class MemoryQuerySet(models.QuerySet["Memory"]):
    def for_project(
        self, project: Project, *, as_array: bool = False, namespaced: bool = True
    ) -> MemoryQuerySet:
        """The project's memories, within the calling code's agent namespace when it has one
        (tenants/namespaces.py: an agent's own memories and the shared pool; `namespaced`
        false: the caller applies it, as a search's filters do). `as_array` writes the
        condition `project_id =
        ANY(ARRAY[id]::bigint[])`, which the keyword index can use (search reads this way).

        The keyword GIN index holds the project beside the words (btree_gin, migration 0014),
        but `project_id = %s` binds a small id as a smallint, and btree_gin's bigint operator
        class has no cross-type equality: a small tenant's keyword branch then read a common
        term's matches in every project and ANDed them with its own rows. A plain
        `= id::bigint` made the planner intersect the project's entries for the large project
        too, where they are most of the index; costed as an array, they are used when short
        (docs/benchmarks.md, "Keyword statements").
        B-tree indexes take either form alike."""
        mine = self.filter(_namespace_q()) if namespaced else self
        if not as_array:
            return mine.filter(project=project)
        return mine.filter(
            models.Func(
                F("project_id"),
                models.Value([project.pk]),
                template="(%(expressions)s::bigint[]))",
                arg_joiner=" = ANY(",
                output_field=models.BooleanField(),
            )
        )

    def alive(self) -> MemoryQuerySet:
        """Not soft-deleted: what every read sees."""
        return self.filter(deleted_at__isnull=True)


def namespace_q(agent: str) -> Q:
    """Memories `agent` may read with namespaces on: its own and the shared pool's."""
    return Q(agent_id__in=[agent, SHARED_AGENT]) | Q(agent_id__isnull=True)


def _namespace_q() -> Q:
    namespace = current_namespace()
    return Q() if namespace is None else namespace_q(namespace.agent)


def _unit_interval(field: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(**{f"{field}__gte": 0.0}) & Q(**{f"{field}__lte": 1.0}),
        name=f"memory_{field}_in_unit_interval",
    )


class Memory(models.Model):
    """One atomic unit of knowledge an agent stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memories")
    content = models.TextField()
    memory_type = models.CharField(
        max_length=20, choices=MemoryType.choices, default=MemoryType.OBSERVATION
    )
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    confidence = models.FloatField(default=1.0)
    importance = models.FloatField(default=0.5)
    source = models.CharField(max_length=200, blank=True, default="")
    context = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    # True while the embedding waits outside the HNSW graph for the indexing job (bulk writes
    # with `vector_index: deferred`); searches compare such rows exactly meanwhile.
    vector_pending = models.BooleanField(default=False, db_default=False)
    content_hash = models.CharField(max_length=64)
    token_count = models.PositiveIntegerField(default=0)

    user_id = models.CharField(max_length=255, null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    run_id = models.CharField(max_length=255, null=True, blank=True)

    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)

    state = models.CharField(max_length=10, choices=MemoryState.choices, default=MemoryState.ACTIVE)
    decay_score = models.FloatField(default=1.0)
    # this memory's own decay rate per day (None: the project's, MEMORY_DECAY_RATE)
    decay_rate = models.FloatField(null=True, blank=True)
    # the text was replaced by a summary when it was archived; the full text waits in
    # MemoryArchive and comes back when the memory leaves the archived state (lifecycle.py)
    compressed = models.BooleanField(default=False, db_default=False)
    # how useful the memory is judged to be (Memento's evaluator, services/utility.py): 0.5
    # until assessed; `verified_at` is when it last was
    utility_score = models.FloatField(default=0.5, db_default=0.5)
    verified_at = models.DateTimeField(null=True, blank=True)
    pinned = models.BooleanField(default=False)
    # Memento's TTL tier (TtlTier): inferred on write, demoted by the decay job, back to hot
    # when read; a pinned memory (Memento's anchor) is never demoted
    ttl_tier = models.CharField(
        max_length=10, choices=TtlTier.choices, default=TtlTier.WARM, db_default=TtlTier.WARM
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # when what the memory says happened or was said, if the writer knows and it is not when
    # it was stored (an imported conversation, mem0's `timestamp`): dates in a question are
    # matched against it (selectors/search/dates.py). Decay and expiry keep counting from
    # `created_at` and reads, so old history imported today is not pruned as old.
    occurred_at = models.DateTimeField(null=True, blank=True)
    # the store's layer (services/layers.py chooses it on write) and the episode it was
    # stored during (services/episodes.py)
    layer = models.CharField(
        max_length=20,
        choices=MemoryLayer.choices,
        default=MemoryLayer.LONG_TERM,
        db_default=MemoryLayer.LONG_TERM,
    )
    episode = models.ForeignKey(
        Episode,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="memories",
        db_constraint=False,
    )
    # a few sentences standing for a long memory (services/summaries.py), written in the
    # background: searched beside the content, sent instead of it when a budget is tight
    summary = models.TextField(blank=True, default="")
    summary_method = models.CharField(max_length=20, blank=True, default="")  # extractive | llm
    summary_tokens = models.PositiveIntegerField(default=0)
    summary_embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)

    search_vector = models.GeneratedField(
        expression=SearchVector("content", config=TEXT_SEARCH_CONFIG, weight="A")
        + SearchVector(
            Coalesce(F("context"), models.Value(""), output_field=models.TextField()),
            config=TEXT_SEARCH_CONFIG,
            weight="B",
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects = MemoryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "memory"
        verbose_name_plural = "memories"
        indexes = [
            models.Index(fields=["project", "-created_at", "-id"], name="memory_project_created"),
            models.Index(fields=["project", "user_id"], name="memory_project_user"),
            # a user's live vectors, covering: semantic search scoped to one user (the common case)
            # reads them index-only instead of one ~2 kB table page per memory (see migration
            # 0010). Only columns reinforcement never writes, so its updates stay HOT; the
            # embedding is fixed at 384 dims, so a tuple (~1.6 kB) fits a btree page's limit.
            # Scans that need the table row anyway (keyword, lists) keep the small index
            # above: through this one they read ~500 more pages per user of 2,000 memories.
            models.Index(
                fields=["project", "user_id"],
                include=[
                    "id",
                    "agent_id",
                    "run_id",
                    "memory_type",
                    "state",
                    "deleted_at",
                    "created_at",
                    "embedding",
                    "vector_pending",
                ],
                condition=Q(deleted_at__isnull=True),
                name="memory_project_user_vectors",
            ),
            models.Index(fields=["project", "agent_id"], name="memory_project_agent"),
            # a run's memories in the order they were said: search's neighbours (migration 0025)
            models.Index(
                F("project"),
                F("run_id"),
                Case(
                    When(occurred_at__isnull=True, then=F("created_at")),
                    default=F("occurred_at"),
                ),
                F("created_at"),
                F("id"),
                name="memory_project_run",
            ),
            models.Index(fields=["project", "memory_type"], name="memory_project_type"),
            # incremental consolidation: the live memories changed since the last run
            models.Index(
                fields=["project", "updated_at"],
                condition=Q(deleted_at__isnull=True),
                name="memory_project_updated",
            ),
            # counts for list pages: an index-only scan, not a pass over every row
            models.Index(
                fields=["project", "state"],
                condition=Q(deleted_at__isnull=True),
                name="memory_project_live_state",
            ),
            GinIndex(fields=["tags"], name="memory_tags_gin"),
            GinIndex(fields=["metadata"], name="memory_metadata_gin", opclasses=["jsonb_path_ops"]),
            # live rows only, as every read (migration 0013): merged and deleted memories
            # (a third of the rows once consolidation has run on a repetitive import) are
            # neither read by keyword branches nor added to the index by a soft delete. The
            # project and the scope columns (btree_gin, migration 0014) let a search scoped to
            # one user, agent or run intersect its rows with a term's inside the index
            # instead of reading the term's matches in every project and scope.
            GinIndex(
                fields=["project", "user_id", "agent_id", "run_id", "search_vector"],
                condition=Q(deleted_at__isnull=True),
                name="memory_search_vector_gin",
            ),
            # ef_construction 128 (pgvector's default is 64): see migration 0009. Live rows
            # only (every read is of live rows): a soft delete stays out of the graph
            # instead of inserting its new row version into it (migration 0011). Rows whose
            # vector is pending stay out until the indexing job (migration 0012): every
            # statement ranking through the graph says `NOT vector_pending`, and ranks the
            # pending rows exactly beside it (memories.selectors.pending_vectors).
            HnswIndex(
                name="memory_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=128,
                opclasses=["vector_cosine_ops"],
                condition=Q(deleted_at__isnull=True, vector_pending=False),
            ),
            # an episode's memories in order (GET /episodes/{id}/)
            models.Index(
                fields=["project", "episode", "created_at"],
                condition=Q(episode__isnull=False),
                name="memory_project_episode",
            ),
            # the layer job's scan: live short-term memories, oldest first
            models.Index(
                fields=["project", "created_at"],
                condition=Q(deleted_at__isnull=True, layer="short_term"),
                name="memory_short_term",
            ),
            # the rows waiting for the graph, per project (few: the job drains them)
            models.Index(
                fields=["project"],
                condition=Q(deleted_at__isnull=True, vector_pending=True),
                name="memory_vector_pending",
            ),
            # summaries, searched beside the content (selectors/search/summaries.py): only
            # the long memories that have one are in these indexes
            GinIndex(
                SearchVector("summary", config=TEXT_SEARCH_CONFIG),
                condition=Q(deleted_at__isnull=True) & ~Q(summary=""),
                name="memory_summary_words",
            ),
            HnswIndex(
                name="memory_summary_hnsw",
                fields=["summary_embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
                condition=Q(deleted_at__isnull=True, summary_embedding__isnull=False),
            ),
        ]
        constraints = [
            _unit_interval("confidence"),
            _unit_interval("importance"),
            _unit_interval("decay_score"),
            _unit_interval("utility_score"),
            models.CheckConstraint(
                condition=Q(decay_rate__isnull=True)
                | (Q(decay_rate__gte=0.0) & Q(decay_rate__lte=MAX_DECAY_RATE)),
                name="memory_decay_rate_in_range",
            ),
            # Exact duplicates: one live memory per content within a project and scope.
            models.UniqueConstraint(
                fields=["project", "content_hash", "user_id", "agent_id", "run_id"],
                condition=Q(deleted_at__isnull=True),
                nulls_distinct=False,
                name="memory_unique_live_content_per_scope",
            ),
            models.CheckConstraint(
                condition=Q(user_id__isnull=False)
                | Q(agent_id__isnull=False)
                | Q(run_id__isnull=False),
                name="memory_has_scope",
            ),
            models.CheckConstraint(
                condition=Q(layer__in=MemoryLayer.values), name="memory_layer_known"
            ),
            models.CheckConstraint(
                condition=Q(ttl_tier__in=TtlTier.values), name="memory_ttl_tier_known"
            ),
        ]

    def __str__(self) -> str:
        return self.content[:80]


class HistoryEvent(models.TextChoices):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    MERGE = "MERGE"
    RESTORE = "RESTORE"


class MemoryHistory(models.Model):
    """One row per change to a memory: the audit trail, oldest first."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="history", db_constraint=False
    )
    event = models.CharField(max_length=10, choices=HistoryEvent.choices)
    old_content = models.TextField(null=True, blank=True)
    new_content = models.TextField(null=True, blank=True)
    old_values = models.JSONField(default=dict, blank=True)
    new_values = models.JSONField(default=dict, blank=True)
    actor = models.CharField(max_length=255, blank=True, default="")
    user_id = models.CharField(max_length=255, null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    run_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = "memory history entry"
        verbose_name_plural = "memory history"
        indexes = [
            models.Index(fields=["project", "memory", "created_at"], name="history_memory_time"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.memory_id}"


class LinkType(models.TextChoices):
    RELATES_TO = "relates_to"
    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    SUPERSEDES = "supersedes"
    SUPERSEDED_BY = "superseded_by"
    CAUSED_BY = "caused_by"
    RESOLVED_BY = "resolved_by"
    CAUSES = "causes"
    PART_OF = "part_of"
    CONTAINS = "contains"
    EXTENDS = "extends"
    REFERENCES = "references"
    PRECEDES = "precedes"
    FOLLOWS = "follows"


class MemoryLink(models.Model):
    """A typed, directed, weighted edge between two memories of one project."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    from_memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="links_out", db_constraint=False
    )
    to_memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="links_in", db_constraint=False
    )
    link_type = models.CharField(max_length=20, choices=LinkType.choices)
    strength = models.FloatField(default=1.0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "from_memory", "to_memory", "link_type"],
                name="memorylink_unique_per_type",
            ),
            models.CheckConstraint(
                condition=~Q(from_memory=F("to_memory")), name="memorylink_not_self"
            ),
            models.CheckConstraint(
                condition=Q(strength__gte=0.0) & Q(strength__lte=1.0),
                name="memorylink_strength_in_unit_interval",
            ),
            # the link vocabulary is a database invariant, not only the service's check
            models.CheckConstraint(
                condition=Q(link_type__in=LinkType.values), name="memorylink_type_known"
            ),
        ]
        indexes = [models.Index(fields=["project", "to_memory"], name="memorylink_project_to")]

    def __str__(self) -> str:
        return f"{self.from_memory_id} -{self.link_type}-> {self.to_memory_id}"


class ContradictionStatus(models.TextChoices):
    OPEN = "open"
    RESOLVED = "resolved"


class ContradictionResolution(models.TextChoices):
    KEEP_A = "keep_a"
    KEEP_B = "keep_b"
    KEEP_BOTH = "keep_both"
    MERGE = "merge"


class ContradictionReview(models.Model):
    """Two memories that seem to contradict each other, waiting for a human (or agent) call.

    Nothing is deleted when a contradiction is found: the pair gets a `contradicts` link and
    this record; resolving it decides which memory survives."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    memory_a = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    memory_b = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    similarity = models.FloatField(default=0.0)
    cues = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    detected_by = models.CharField(max_length=20, default="heuristic")  # heuristic | llm
    reason = models.TextField(blank=True, default="")
    status = models.CharField(
        max_length=10, choices=ContradictionStatus.choices, default=ContradictionStatus.OPEN
    )
    resolution = models.CharField(
        max_length=10, choices=ContradictionResolution.choices, null=True, blank=True
    )
    resolved_by = models.CharField(max_length=255, blank=True, default="")
    resolved_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "memory_a", "memory_b"], name="contradiction_unique_pair"
            ),
            models.CheckConstraint(
                condition=~Q(memory_a=F("memory_b")), name="contradiction_not_self"
            ),
        ]
        indexes = [
            models.Index(fields=["project", "status", "-created_at"], name="contradiction_status"),
        ]

    def __str__(self) -> str:
        return f"{self.memory_a_id} ⟂ {self.memory_b_id} ({self.status})"


class MaintenanceState(models.Model):
    """Per-project bookkeeping of the background jobs (one row per project)."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="+")
    inserts_since_consolidation = models.PositiveIntegerField(default=0)
    last_consolidation_at = models.DateTimeField(null=True, blank=True)
    last_decay_at = models.DateTimeField(null=True, blank=True)
    last_prune_at = models.DateTimeField(null=True, blank=True)
    # set while the scheduled decay job is paused for this project (a safety valve)
    decay_paused_at = models.DateTimeField(null=True, blank=True)
    decay_paused_by = models.CharField(max_length=255, blank=True, default="", db_default="")

    def __str__(self) -> str:
        return f"maintenance of {self.project_id}"


class MemoryArchive(models.Model):
    """The full text of a memory whose content was compressed to a summary when it was
    archived. The summary stays in the memory (searchable by keyword; the embedding is still
    the full text's); restoring puts this text back, byte for byte."""

    memory = models.OneToOneField(
        Memory,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="archive",
        db_constraint=False,
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    content = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    summary_hash = models.CharField(max_length=64)  # the summary it was replaced by
    compressed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "memory archive"
        verbose_name_plural = "memory archives"

    def __str__(self) -> str:
        return f"archive of {self.memory_id}"


class MemoryFeedback(models.Model):
    """An agent's verdict on one memory a tool returned: did it help? One input of the
    memory's utility score."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="feedback", db_constraint=False
    )
    helpful = models.BooleanField()
    tool_name = models.CharField(max_length=100, blank=True, default="")
    actor = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "memory feedback"
        verbose_name_plural = "memory feedback"
        indexes = [models.Index(fields=["project", "memory"], name="memoryfeedback_memory")]

    def __str__(self) -> str:
        return f"{self.memory_id}: {'helpful' if self.helpful else 'not helpful'}"


class EmbeddingSpace(models.Model):
    """The embedding model the stored vectors come from (key "default"), written on migrate
    and when `manage.py reembed` finishes, and the model a switch in progress moves them to
    (key "next"). Start-up compares "default" with the configured provider so a changed model
    or dimension is a clear error, not silently incomparable vectors; running processes
    follow it when a live switch completes (`generation`)."""

    key = models.CharField(max_length=20, primary_key=True, default="default")
    provider = models.CharField(max_length=50)
    model_name = models.CharField(max_length=255)
    dimensions = models.PositiveIntegerField()
    recorded_at = models.DateTimeField(default=timezone.now)
    # prompts given for the model (absent: its own) and the size asked of a remote server
    options = models.JSONField(default=dict, blank=True)
    # a switch's progress ("next" row): filling, indexing, switching
    stage = models.CharField(max_length=20, blank=True, default="")
    # live switches completed: a process that sees it move embeds with this row's model
    generation = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.provider}:{self.model_name} ({self.dimensions})"


class PromptKind(models.TextChoices):
    EXTRACTION = "extraction"  # fact extraction from a conversation
    UPDATE_DECISION = "update_decision"  # ADD / UPDATE / DELETE / NONE for each fact


class ProjectPrompt(models.Model):
    """One version of a project's own instructions for an LLM step, appended to ours (never
    replacing them). The newest version of a kind is the active one; an empty text switches
    the project's instructions off. Versions are never edited: a rollback re-activates an
    old text as a new version, so the list is the full record of what the model was told."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=PromptKind.choices)
    version = models.PositiveIntegerField()
    text = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=255, blank=True, default="")  # the key's prefix
    rolled_back_from = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["kind", "-version"]
        verbose_name = "project prompt"
        verbose_name_plural = "project prompts"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "kind", "version"], name="projectprompt_unique_version"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=PromptKind.values), name="projectprompt_kind_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} v{self.version}"
