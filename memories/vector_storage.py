"""How a model's vectors are stored: the column type and operator class for a dimension.

Up to 384 dimensions a vector is stored as `vector` (float4, exact: today's all-MiniLM-L6-v2
columns); above, as `halfvec` (float2): half the heap, half the graph, and pgvector's HNSW
takes `halfvec` up to 4,000 dimensions where `vector` stops at 2,000. A user's covering index
(memories, `memory_project_user_vectors`) holds the vector while it takes at most the bytes a
384-d `vector` does (1,544: `halfvec` up to 768 dimensions), so its tuples stay well under a
btree entry's 2,704-byte limit with scope ids of any allowed length; a larger vector is left
out of it (a user's ranking then reads the table rows). The figures behind the choice:
docs/search.md, "Embedding models".
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured
from django.db import connections

FLOAT4_UP_TO = 384
MAX_DIMENSIONS = 4000
COVERED_BYTES = 8 + 4 * FLOAT4_UP_TO  # a vector(384) as stored: header and floats


@dataclass(frozen=True)
class VectorStorage:
    kind: str  # "vector" or "halfvec"
    dimensions: int

    @property
    def column_type(self) -> str:
        return f"{self.kind}({self.dimensions})"

    @property
    def opclass(self) -> str:
        return f"{self.kind}_cosine_ops"

    @property
    def covered(self) -> bool:
        """The vector fits the users' covering index."""
        width = 4 if self.kind == "vector" else 2
        return 8 + width * self.dimensions <= COVERED_BYTES

    def __str__(self) -> str:
        return self.column_type


def storage_for(dimensions: int) -> VectorStorage:
    if not 1 <= dimensions <= MAX_DIMENSIONS:
        raise ImproperlyConfigured(
            f"an embedding model of {dimensions} dimensions cannot be indexed: pgvector's HNSW "
            f"takes at most {MAX_DIMENSIONS} (as halfvec)"
        )
    return VectorStorage("vector" if dimensions <= FLOAT4_UP_TO else "halfvec", dimensions)


def column_storage(
    table: str, column: str = "embedding", using: str = "default"
) -> VectorStorage | None:
    """The type a vector column has in the database (None: no such column, or no size)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT t.typname, a.atttypmod FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
            " WHERE a.attrelid = to_regclass(%s) AND a.attname = %s AND NOT a.attisdropped",
            [table, column],
        )
        row = cursor.fetchone()
    if row is None or row[1] is None or row[1] < 1 or row[0] not in ("vector", "halfvec"):
        return None
    return VectorStorage(row[0], int(row[1]))
