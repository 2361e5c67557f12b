"""Documents and their chunks in the one knowledge graph (entities.graph_kinds), registered
by the app's `ready()`: a chunk and its document mention entities, a memory cites a chunk
and its document, a document contains its chunks, an episode the documents uploaded in it."""

from __future__ import annotations

from documents.models import ChunkEntity, Document, DocumentChunk, MemoryRef
from entities.graph_kinds import (
    EdgeKind,
    NodeKind,
    matching_scope,
    register_edge_kind,
    register_node_kind,
)
from entities.scope import GraphScope
from memories.models import Memory

_D = Document._meta.db_table
_C = DocumentChunk._meta.db_table
_L = ChunkEntity._meta.db_table
_R = MemoryRef._meta.db_table
_M = Memory._meta.db_table
# a document's chunks are structure, not meaning: a capped subgraph of a long document shows
# what it mentions and who cites it (weights up to 1) before its passages
CONTAINED_CHUNK_WEIGHT = 0.3


def _chunk_scope(scope: GraphScope) -> tuple[str, dict[str, str]]:
    condition, params = matching_scope("d")(scope)
    return (
        f"EXISTS (SELECT 1 FROM {_D} d WHERE d.id = n.document_id "
        f"AND d.project_id = n.project_id AND {condition})",
        params,
    )


NODES = (
    NodeKind("document", _D, "uuid", "n.title", "n.mime_type", scope=matching_scope("n")),
    NodeKind(
        "chunk",
        _C,
        "bigint",
        "coalesce(nullif(n.heading, ''), left(n.content, 120))",
        "'chunk'",
        scope=_chunk_scope,
    ),
)
EDGES = (
    EdgeKind(
        "mentions",
        "chunk",
        "entity",
        f"""SELECT l.chunk_id AS src, l.entity_id AS dst, l.relevance AS weight,
            'mentions'::text AS label, NULL::text AS eid
        FROM {_L} l WHERE l.project_id = %(project)s""",
    ),
    EdgeKind(
        "mentions",
        "document",
        "entity",
        f"""SELECT l.document_id AS src, l.entity_id AS dst, max(l.relevance) AS weight,
            'mentions'::text AS label, NULL::text AS eid
        FROM {_L} l WHERE l.project_id = %(project)s GROUP BY l.document_id, l.entity_id""",
    ),
    EdgeKind(
        "cites",
        "memory",
        "chunk",
        f"""SELECT r.memory_id AS src, r.chunk_id AS dst, coalesce(r.score, 1.0) AS weight,
            r.relation::text AS label, r.id::text AS eid
        FROM {_R} r JOIN {_M} m ON m.id = r.memory_id
        WHERE r.project_id = %(project)s AND m.project_id = %(project)s
          AND m.deleted_at IS NULL""",
    ),
    EdgeKind(
        "cites",
        "memory",
        "document",
        f"""SELECT r.memory_id AS src, r.document_id AS dst, max(coalesce(r.score, 1.0)) AS weight,
            min(r.relation)::text AS label, NULL::text AS eid
        FROM {_R} r JOIN {_M} m ON m.id = r.memory_id
        WHERE r.project_id = %(project)s AND m.project_id = %(project)s
          AND m.deleted_at IS NULL
        GROUP BY r.memory_id, r.document_id""",
    ),
    EdgeKind(
        "contains",
        "document",
        "chunk",
        f"""SELECT c.document_id AS src, c.id AS dst,
            {CONTAINED_CHUNK_WEIGHT}::float8 AS weight, 'contains'::text AS label,
            NULL::text AS eid
        FROM {_C} c WHERE c.project_id = %(project)s""",
    ),
    EdgeKind(
        "contains",
        "episode",
        "document",
        f"""SELECT d.episode_id AS src, d.id AS dst, 1.0::float8 AS weight,
            'contains'::text AS label, NULL::text AS eid
        FROM {_D} d WHERE d.project_id = %(project)s AND d.episode_id IS NOT NULL""",
    ),
)


def register() -> None:
    for node in NODES:
        register_node_kind(node)
    for edge in EDGES:
        register_edge_kind(edge)
