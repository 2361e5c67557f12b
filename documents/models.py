"""Documents and their chunks: the passages search finds beside memories."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from entities.models import Entity
from memories.models import EMBEDDING_DIMENSIONS, TEXT_SEARCH_CONFIG, Episode, Memory
from tenants.models import Project

# Foreign keys to another tenant table are `db_constraint=False`: the database holds composite
# ones, `(x_id, project_id) -> (id, project_id)` (see the note in memories/models.py).


class DocumentStatus(models.TextChoices):
    PENDING = "pending"  # stored and chunked; keyword search finds it, embedding is queued
    INDEXING = "indexing"  # the embedding job is under way (`chunks_embedded` counts)
    READY = "ready"  # every chunk has its vector
    FAILED = "failed"  # the job gave up (`status_reason` says why); keyword search still works


class Document(models.Model):
    """One uploaded file or text, in one scope (user, agent and/or run, as memories)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="documents")
    user_id = models.CharField(max_length=255, null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    run_id = models.CharField(max_length=255, null=True, blank=True)
    title = models.CharField(max_length=500)
    source = models.CharField(max_length=2000, blank=True, default="")  # URL or path
    mime_type = models.CharField(max_length=100)
    size_bytes = models.PositiveBigIntegerField()
    page_count = models.PositiveIntegerField(null=True, blank=True)  # PDFs
    content_hash = models.CharField(max_length=64)  # sha256 of the uploaded bytes
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=10, choices=DocumentStatus.choices, default=DocumentStatus.PENDING
    )
    status_reason = models.TextField(blank=True, default="")
    chunk_count = models.PositiveIntegerField(default=0)
    chunks_embedded = models.PositiveIntegerField(default=0)
    # the chunking it was cut with, in characters (null: stored before it was recorded)
    chunk_size = models.PositiveIntegerField(null=True, blank=True)
    chunk_overlap = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    indexed_at = models.DateTimeField(null=True, blank=True)
    # the conversation or task it was uploaded during (docs/episodes.md)
    episode = models.ForeignKey(
        Episode,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="documents",
        db_constraint=False,
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "-created_at", "-id"], name="document_project_created"),
            models.Index(fields=["project", "user_id"], name="document_project_user"),
            # an episode's documents (the graph's episode -> document edges)
            models.Index(
                fields=["project", "episode"],
                condition=Q(episode__isnull=False),
                name="document_project_episode",
            ),
        ]
        constraints = [
            # the same bytes uploaded again in the same scope are the same document
            models.UniqueConstraint(
                fields=["project", "content_hash", "user_id", "agent_id", "run_id"],
                nulls_distinct=False,
                name="document_unique_content_per_scope",
            ),
            models.CheckConstraint(
                condition=Q(user_id__isnull=False)
                | Q(agent_id__isnull=False)
                | Q(run_id__isnull=False),
                name="document_has_scope",
            ),
            models.CheckConstraint(
                condition=Q(chunks_embedded__lte=models.F("chunk_count")),
                name="document_embedded_within_chunks",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class DocumentChunk(models.Model):
    """A passage of a document: a span of its extracted text within one page and one
    heading section, searchable by keywords at once and by meaning once embedded."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="chunks", db_constraint=False
    )
    ordinal = models.PositiveIntegerField()  # 0, 1, ... in reading order
    char_start = models.PositiveIntegerField()  # [start, end) in the document's extracted text
    char_end = models.PositiveIntegerField()
    page = models.PositiveIntegerField(null=True, blank=True)  # 1-based; PDFs only
    heading_path = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    heading = models.TextField(blank=True, default="")  # the path as one text, for the tsvector
    content = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    # a few sentences standing for the passage under a tight token budget (documents.summaries)
    summary = models.TextField(blank=True, default="")
    summary_method = models.CharField(max_length=20, blank=True, default="")  # extractive | llm
    summary_tokens = models.PositiveIntegerField(default=0)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config=TEXT_SEARCH_CONFIG, weight="A")
        + SearchVector("heading", config=TEXT_SEARCH_CONFIG, weight="B")
        + SearchVector("summary", config=TEXT_SEARCH_CONFIG, weight="C"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["document", "ordinal"]
        indexes = [
            models.Index(fields=["project", "document"], name="chunk_project_document"),
            # no pending list, as memories' keyword index (docs/architecture.md)
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin", fastupdate=False),
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=128,
                opclasses=["vector_cosine_ops"],
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "document", "ordinal"], name="chunk_unique_ordinal"
            ),
            models.CheckConstraint(
                condition=Q(char_end__gte=models.F("char_start")), name="chunk_span_ordered"
            ),
        ]

    def __str__(self) -> str:
        return self.content[:80]


class MemoryRef(models.Model):
    """A memory citing a passage of a document: the chunk it was learned from or rests on,
    optionally the quoted words and where they are in the chunk's text."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="document_refs", db_constraint=False
    )
    chunk = models.ForeignKey(
        DocumentChunk, on_delete=models.CASCADE, related_name="memory_refs", db_constraint=False
    )
    # the chunk's document, kept beside it so a document's citing memories are one index scan
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="memory_refs", db_constraint=False
    )
    relation = models.CharField(max_length=20, default="cites")  # cites | learned_from
    quote = models.TextField(blank=True, default="")
    quote_start = models.PositiveIntegerField(null=True, blank=True)  # [start, end) in the chunk
    quote_end = models.PositiveIntegerField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["project", "memory"], name="memoryref_project_memory"),
            models.Index(fields=["project", "document"], name="memoryref_project_document"),
            # the memories citing a chunk: a graph walk from a passage
            models.Index(fields=["project", "chunk"], name="memoryref_project_chunk"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "memory", "chunk"], name="memoryref_unique_per_chunk"
            ),
            models.CheckConstraint(
                condition=Q(relation__in=["cites", "learned_from"]), name="memoryref_relation_known"
            ),
            models.CheckConstraint(
                condition=Q(quote_start__isnull=True, quote_end__isnull=True)
                | Q(quote_end__gte=models.F("quote_start")),
                name="memoryref_quote_span_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} {self.relation} chunk {self.chunk_id}"


class DocumentOriginal(models.Model):
    """The bytes a document was uploaded as, byte for byte: in the database (`data`) when
    small or when MEMORY_DOCUMENT_STORAGE says so, else a file of the storage backend
    (`storage_name`; documents.storage). Downloaded as they came, exported, backed up, and
    read again to re-chunk the document."""

    document = models.OneToOneField(
        Document,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="original",
        db_constraint=False,
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    filename = models.CharField(max_length=500, blank=True, default="")  # as uploaded
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    data = models.BinaryField(null=True, blank=True)
    storage_name = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(data__isnull=False, storage_name="")
                | (Q(data__isnull=True) & ~Q(storage_name="")),
                name="documentoriginal_in_one_place",
            ),
        ]

    def __str__(self) -> str:
        return self.filename or str(self.document_id)


class ChunkEntity(models.Model):
    """A document's chunk mentions an entity: found in its text by the extractor that reads
    memories (documents.graph), an edge of the knowledge graph between a passage and what
    it is about. The document is kept beside the chunk, so a document's entities are one
    index scan."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    chunk = models.ForeignKey(
        DocumentChunk, on_delete=models.CASCADE, related_name="entity_links", db_constraint=False
    )
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="entity_links", db_constraint=False
    )
    entity = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="chunk_links", db_constraint=False
    )
    relevance = models.FloatField(default=0.8)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["chunk", "-relevance", "id"]
        indexes = [
            models.Index(fields=["entity", "chunk"], name="chunkentity_entity"),
            models.Index(fields=["document", "entity"], name="chunkentity_document"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "chunk", "entity"], name="chunkentity_unique_per_chunk"
            ),
            models.CheckConstraint(
                condition=Q(relevance__gte=0.0) & Q(relevance__lte=1.0),
                name="chunkentity_relevance_in_unit_interval",
            ),
        ]

    def __str__(self) -> str:
        return f"chunk {self.chunk_id} ~ entity {self.entity_id}"
