"""The vector columns of memories, entities and document chunks, and their indexes, sized for
an embedding model (memories.vector_storage chooses the type for a dimension).

The migrations create `vector(384)` columns. On a fresh install (no vector stored yet) the
first `migrate` gives them the configured model's type and rebuilds their indexes
(`fit_vector_columns`, a post_migrate step), so a store started on all-mpnet-base-v2 has
`halfvec(768)` columns. A store that holds vectors changes model only through
`manage.py reembed --model` (embedding_switch.py), which builds a shadow column
(`embedding_next`) and its indexes beside the live ones with the same definitions.

Index definitions come from the models (`Meta.indexes`), with the operator class of the
storage, and the users' covering index without the vector when it would not fit."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connections, models
from pgvector.django import HnswIndex

from documents.models import DocumentChunk
from entities.models import Entity
from memories.models import Memory
from memories.vector_storage import VectorStorage, column_storage
from memoryplatform.db.rls import as_owner

logger = logging.getLogger(__name__)
SHADOW = "embedding_next"


@dataclass(frozen=True)
class VectorTable:
    name: str  # as maintenance.embeddings names it
    model: type[models.Model]
    hnsw: str
    covering: str | None = None  # an index that may hold the vector (INCLUDE)
    plain: bool = False  # the vector is stored in the row, never toasted (memories: 0004)

    @property
    def table(self) -> str:
        return self.model._meta.db_table

    @property
    def indexes(self) -> tuple[str, ...]:
        return (self.hnsw,) if self.covering is None else (self.hnsw, self.covering)


VECTOR_TABLES = (
    VectorTable("memories", Memory, "memory_embedding_hnsw", "memory_project_user_vectors", True),
    VectorTable("entities", Entity, "entity_embedding_hnsw"),
    VectorTable("chunks", DocumentChunk, "chunk_embedding_hnsw"),
)


def index_sql(
    table: VectorTable,
    index_name: str,
    storage: VectorStorage,
    *,
    column: str = "embedding",
    name: str | None = None,
    concurrently: bool = False,
    using: str = "default",
) -> str:
    """CREATE INDEX for one of the table's vector indexes as its model declares it, over
    `column` stored as `storage`, named `name` (default: its own)."""
    declared = next(index for index in table.model._meta.indexes if index.name == index_name)
    _path, args, kwargs = declared.deconstruct()
    kwargs["name"] = name or index_name
    if isinstance(declared, HnswIndex):
        kwargs["opclasses"] = [storage.opclass]
    elif not storage.covered:
        kwargs["include"] = [field for field in kwargs.get("include", []) if field != "embedding"]
    index = type(declared)(*args, **kwargs)
    with connections[using].schema_editor(collect_sql=True) as editor:
        sql = str(index.create_sql(table.model, editor, concurrently=concurrently))
    return sql.replace('"embedding"', f'"{column}"')


def stored_vectors(using: str = "default") -> bool:
    """Some row of some table holds a vector."""
    with connections[using].cursor() as cursor:
        for table in VECTOR_TABLES:
            cursor.execute(
                f"SELECT EXISTS (SELECT 1 FROM {table.table} WHERE embedding IS NOT NULL)"
            )
            if cursor.fetchone()[0]:
                return True
    return False


def vector_columns(using: str = "default") -> dict[str, VectorStorage | None]:
    return {table.name: column_storage(table.table, using=using) for table in VECTOR_TABLES}


def resize_vector_columns(storage: VectorStorage, *, using: str = "default") -> list[str]:
    """Give every vector column (holding no vector) `storage`'s type, its indexes rebuilt;
    the names of the tables changed. For an empty store: the indexes are built at once."""
    changed = []
    connection = connections[using]
    with as_owner(connection), connection.cursor() as cursor:
        for table in VECTOR_TABLES:
            if column_storage(table.table, using=using) == storage:
                continue
            for index in table.indexes:
                cursor.execute(f"DROP INDEX IF EXISTS {index}")
            cursor.execute(
                f"ALTER TABLE {table.table} ALTER COLUMN embedding TYPE {storage.column_type}"
                " USING NULL"
            )
            if table.plain:
                cursor.execute(
                    f"ALTER TABLE {table.table} ALTER COLUMN embedding SET STORAGE PLAIN"
                )
            for index in table.indexes:
                cursor.execute(index_sql(table, index, storage, using=using))
            changed.append(table.name)
    return changed


def fit_vector_columns(using: str = "default", **kwargs: Any) -> None:
    """post_migrate: on a store that holds no vector, the columns take the configured model's
    type and the configured model is recorded. A store holding vectors is left as it is (the
    start-up check compares its recorded model with the configured one)."""
    from memories.services.embedding_space import (
        configured_space,
        embedding_space_record,
        recorded_space,
        same_space,
    )
    from memoryplatform.lib.errors import ProviderError

    try:
        recorded = recorded_space(using=using)
        configured = configured_space()
    except DatabaseError:  # migrated backwards past the tables
        return
    except ProviderError as exc:  # a remote model whose size could not be learnt now
        logger.warning("vector columns left as they are: %s", exc)
        return
    if recorded is not None and same_space(recorded, configured) and _sized(configured, using):
        return
    if stored_vectors(using):
        return
    from memories.vector_storage import storage_for

    changed = resize_vector_columns(storage_for(configured.dimensions), using=using)
    if changed:
        logger.info("vector columns sized for %s: %s", configured, ", ".join(changed))
    embedding_space_record(space=configured, using=using)


def _sized(space: Any, using: str) -> bool:
    from memories.vector_storage import storage_for

    wanted = storage_for(space.dimensions)
    return all(storage == wanted for storage in vector_columns(using).values())
