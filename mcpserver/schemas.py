"""Structured tool output shapes (the tools' `outputSchema`). They mirror the REST serializers,
which produce the values: an MCP client and a REST client see the same fields."""

from __future__ import annotations

from typing import Any, NotRequired

from mcp_types import ToolAnnotations
from typing_extensions import TypedDict

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
IDEMPOTENT_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


class MemoryOut(TypedDict):
    id: str
    content: str
    memory_type: str
    tags: list[str]
    confidence: float
    effective_confidence: float | None
    importance: float
    source: str
    context: str
    metadata: dict[str, Any]
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    token_count: int
    has_embedding: bool
    access_count: int
    last_accessed_at: str | None
    state: str
    decay_score: float
    decay_rate: float | None
    utility_score: float
    verified_at: str | None
    compressed: bool
    pinned: bool
    ttl_tier: str
    expires_at: str | None
    occurred_at: str | None
    version: int
    created_at: str
    updated_at: str
    layer: str
    episode_id: str | None
    summary: str  # a long memory's few sentences ("" until written, or for a short one)
    # memory_get: the document passages the memory cites (documents.refs)
    document_refs: NotRequired[list[dict[str, Any]]]


class StoreResult(TypedDict):
    created: bool
    memory: MemoryOut


class DeleteOut(TypedDict):
    deleted: int
    deleted_ids: list[str]
    skipped_pinned_ids: list[str]
    note: NotRequired[str]


class HistoryEntry(TypedDict):
    id: str
    memory_id: str
    event: str
    old_content: str | None
    new_content: str | None
    old_values: dict[str, Any]
    new_values: dict[str, Any]
    actor: str
    is_deleted: bool
    created_at: str


class HistoryOut(TypedDict):
    memory_id: str
    history: list[HistoryEntry]


class LinkOut(TypedDict):
    id: str
    from_id: str
    to_id: str
    link_type: str
    strength: float
    metadata: dict[str, Any]
    created_at: str


class LinkResult(TypedDict):
    created: bool
    link: LinkOut


class FeedbackOut(TypedDict):
    id: int
    tool_name: str
    recorded: bool
