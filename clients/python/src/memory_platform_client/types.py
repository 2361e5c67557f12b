"""Result types: the JSON the platform returns, as `TypedDict`s (plain dicts at run time).

Field names and meanings follow the OpenAPI schema (`/api/schema/`). Responses the schema
describes only as an object (analytics, graph walks, lifecycle reports) are `dict[str, Any]`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

MemoryType = Literal[
    "fact",
    "decision",
    "preference",
    "error",
    "procedure",
    "observation",
    "learning",
    "pattern",
    "relation",
    "episode",
]
MemoryState = Literal["active", "dormant", "archived", "expired"]
SearchMode = Literal["hybrid", "keyword", "semantic", "graph"]
Fusion = Literal["calibrated", "minmax", "rrf"]
LinkType = Literal[
    "relates_to",
    "supports",
    "contradicts",
    "supersedes",
    "superseded_by",
    "caused_by",
    "resolved_by",
    "causes",
    "part_of",
    "contains",
    "extends",
    "references",
    "precedes",
    "follows",
]
EntityType = Literal[
    "person",
    "organization",
    "project",
    "concept",
    "location",
    "technology",
    "event",
    "product",
    "unknown",
]
Resolution = Literal["keep_a", "keep_b", "keep_both", "merge"]
Direction = Literal["out", "in", "both"]
JSON = dict[str, Any]


class Memory(TypedDict):
    id: str
    content: str
    memory_type: MemoryType
    tags: list[str]
    confidence: float
    effective_confidence: float
    importance: float
    source: str
    context: str
    metadata: JSON
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    content_hash: str
    token_count: int
    has_embedding: bool
    access_count: int
    last_accessed_at: str | None
    state: MemoryState
    decay_score: float
    pinned: bool
    expires_at: str | None
    deleted_at: str | None
    version: int
    created_at: str
    updated_at: str
    decay_rate: NotRequired[float | None]  # its own decay rate per day; None: the project's
    utility_score: NotRequired[float | None]
    verified_at: NotRequired[str | None]
    compressed: NotRequired[bool]  # archived and compressed (`lifecycle.decompress`)
    occurred_at: NotRequired[str | None]  # when it happened or was said, if not when stored
    summary: NotRequired[str]  # a long memory's few sentences, written in the background


class MemoryCreated(Memory):
    created: bool  # False: an exact or near duplicate in the same scope was returned


class ScoredMemory(Memory):
    score: float
    score_parts: dict[str, float]
    summarized: NotRequired[bool]  # the token budget took the summary (then in `content`)


class MemoryPage(TypedDict):
    results: list[Memory]
    count: int  # every match, not only this page
    limit: int
    offset: int


class BulkCreated(TypedDict):
    results: list[MemoryCreated]
    created: int
    existing: int


class SearchResponse(TypedDict):
    results: list[ScoredMemory]
    count: int  # results on this page
    mode: SearchMode
    limit: int
    offset: int
    token_budget: int | None
    tokens: int
    budget_exhausted: bool


class AddEvent(TypedDict):
    id: str | None
    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    memory: str | None
    old_memory: NotRequired[str]


class AddResult(TypedDict):
    results: list[AddEvent]


class History(TypedDict):
    id: str
    memory_id: str
    event: Literal["ADD", "UPDATE", "DELETE", "MERGE", "RESTORE"]
    old_content: str | None
    new_content: str | None
    old_values: Any
    new_values: Any
    actor: str
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    is_deleted: bool
    created_at: str


class Link(TypedDict):
    id: str
    from_id: str
    to_id: str
    link_type: LinkType
    strength: float
    metadata: JSON
    created_at: str


class Deleted(TypedDict):
    deleted: Any  # a count, or counts by kind


class EntityRef(TypedDict):
    id: int
    name: str
    entity_type: EntityType


class Entity(EntityRef):
    description: str
    aliases: list[str]
    metadata: JSON
    has_embedding: bool
    relation_count: int
    created_at: str
    updated_at: str


class EntityCreated(Entity):
    created: bool


class EntityDetail(Entity):
    relations: Any


class EntityPage(TypedDict):
    results: list[Entity]
    count: int
    limit: int
    offset: int


class Relation(TypedDict):
    id: int
    source: EntityRef
    target: EntityRef
    relation_type: str
    strength: float
    confidence: float
    context: str
    metadata: JSON
    valid_from: str | None
    valid_to: str | None
    invalidated_at: str | None
    valid_now: bool
    created_at: str
    updated_at: str


class RelationCreated(Relation):
    closed: list[int]  # relations this one replaced (closed at its valid_from)


class RelationPage(TypedDict):
    results: list[Relation]
    count: int
    limit: int
    offset: int


class Contradiction(TypedDict):
    id: str
    memory_a: Memory
    memory_b: Memory
    similarity: float
    cues: list[Any]
    detected_by: str
    reason: str
    status: Literal["open", "resolved"]
    resolution: Resolution | None
    resolved_by: str
    resolved_at: str | None
    note: str
    created_at: str


class ContradictionList(TypedDict):
    results: list[Contradiction]
    count: int


class PruneCandidates(TypedDict):
    threshold: float
    enabled: bool  # whether the daily prune job runs for this project
    count: int
    results: list[Memory]


class SessionContext(TypedDict):
    core: list[Memory]
    working: list[Memory]
    tokens_used: int
    token_budget: int
    text: str


class Document(TypedDict):
    id: str
    title: str
    source: str
    mime_type: str
    size_bytes: int
    page_count: int | None
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    metadata: JSON
    content_hash: str
    status: str  # pending, indexing, ready, failed
    status_reason: str
    progress: dict[str, int]  # chunks_embedded, chunks_total
    created_at: str
    indexed_at: str | None


class DocumentCreated(Document):
    created: bool  # False: the same bytes in the same scope were stored already


class DocumentPage(TypedDict):
    results: list[Document]
    count: int
    limit: int
    offset: int


class Chunk(TypedDict):
    id: int
    document_id: str
    ordinal: int
    char_start: int
    char_end: int
    page: int | None
    heading_path: list[str]
    content: str
    token_count: int


class ChunkPage(TypedDict):
    results: list[Chunk]
    count: int
    limit: int
    offset: int


class Event(TypedDict):
    """One live-feed event (`memory_created`, `memory_updated`, ...; `subscribed` first)."""

    type: str
    data: Any
    project: NotRequired[str]  # the project's slug
    at: NotRequired[str]  # when it happened (ISO 8601)


class MemoryFilters(TypedDict, total=False):
    """Filters every memory list and search takes (docs/search.md)."""

    user_id: str
    agent_id: str
    run_id: str
    memory_type: MemoryType | list[MemoryType]  # any of these types
    tags: list[str]  # all of these tags
    source: str
    state: MemoryState | list[MemoryState | Literal["all"]]
    created_after: str | datetime
    created_before: str | datetime
    min_confidence: float  # decay-aware
    pinned: bool
    entity_ids: list[int]  # linked to all these knowledge-graph entities
    entities: list[str]  # the same, by entity name
    filters: JSON  # an AND/OR/NOT filter expression (mem0's filter language)


class MemoryFields(TypedDict, total=False):
    """What a memory is stored with (`content` is required on create)."""

    user_id: str
    agent_id: str
    run_id: str
    memory_type: MemoryType
    tags: list[str]
    confidence: float
    importance: float
    source: str
    context: str
    metadata: JSON
    pinned: bool
    expires_at: str | datetime | None
    occurred_at: str | datetime | None  # when it happened or was said (an imported chat)
    entity_names: list[str]  # link these knowledge-graph entities (created when new)


class MemoryChanges(TypedDict, total=False):
    """A partial update: new `content` bumps `version`, re-embeds and writes history."""

    content: str
    memory_type: MemoryType
    tags: list[str]
    confidence: float
    importance: float
    source: str
    context: str
    metadata: JSON
    pinned: bool
    expires_at: str | datetime | None
    occurred_at: str | datetime | None
    supersedes: list[str]  # ids of older memories this one replaces


class TraversalOptions(TypedDict, total=False):
    depth: int  # 0-5
    direction: Direction
    min_strength: float
    max_nodes: int
    link_type: LinkType | list[LinkType]
