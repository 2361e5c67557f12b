"""The vector columns of memories (content and summary), entities and document chunks, and
their indexes, sized for an embedding model (memories.vector_storage chooses the type for a
dimension).

The migrations create `vector(384)` columns. At each `migrate` (`fit_vector_columns`, a
post_migrate step) a column that holds no vector takes the type of the store's model and its
indexes are rebuilt: on a fresh install the configured model's, so a store started on
all-mpnet-base-v2 has `halfvec(768)` columns; on a store holding vectors the recorded model's
(a column a later migration added). A store that holds vectors changes model only through
`manage.py reembed --model` (embedding_switch.py), which builds a shadow column beside each
vector column (`embedding_next`, `summary_embedding_next`) and its indexes with the same
definitions.

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
from memories.services.embedding_space import (
    configured_space,
    embedding_space_record,
    recorded_space,
    same_space,
)
from memories.vector_storage import VectorStorage, column_storage, storage_for
from platformcore.db.rls import as_owner
from platformcore.lib.errors import ProviderError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VectorTable:
    """One vector column: the rows worth a vector (`live`), the text it is the embedding of
    (`text`, SQL over the row, `{t}` its alias: as the owning app's service composes it) and
    the columns that text is made of."""

    name: str  # as maintenance.embeddings names it
    model: type[models.Model]
    hnsw: str
    text: str
    text_columns: tuple[str, ...]
    live: str = "TRUE"
    column: str = "embedding"
    covering: str | None = None  # an index that may hold the vector (INCLUDE)
    plain: bool = False  # the vector is stored in the row, never toasted (memories: 0004)

    @property
    def table(self) -> str:
        return self.model._meta.db_table

    @property
    def shadow(self) -> str:
        """The column a live switch fills beside this one."""
        return f"{self.column}_next"

    @property
    def indexes(self) -> tuple[str, ...]:
        return (self.hnsw,) if self.covering is None else (self.hnsw, self.covering)

    def text_of(self, alias: str = "") -> str:
        return self.text.format(t=f"{alias}." if alias else "")


VECTOR_TABLES = (
    VectorTable(
        "memories",
        Memory,
        "memory_embedding_hnsw",
        "{t}content",
        ("content",),
        live="deleted_at IS NULL",
        covering="memory_project_user_vectors",
        plain=True,
    ),
    VectorTable(
        "memory_summaries",
        Memory,
        "memory_summary_hnsw",
        "{t}summary",
        ("summary",),
        live="deleted_at IS NULL AND summary <> ''",
        column="summary_embedding",
    ),
    VectorTable(  # as entities.services.entities.entity_embedding_text: "name: description"
        "entities",
        Entity,
        "entity_embedding_hnsw",
        "CASE WHEN coalesce({t}description, '') = '' THEN {t}name"
        " ELSE {t}name || ': ' || {t}description END",
        ("name", "description"),
    ),
    VectorTable("chunks", DocumentChunk, "chunk_embedding_hnsw", "{t}content", ("content",)),
)


def index_sql(
    table: VectorTable,
    index_name: str,
    storage: VectorStorage,
    *,
    column: str | None = None,
    name: str | None = None,
    concurrently: bool = False,
    using: str = "default",
) -> str:
    """CREATE INDEX for one of the table's vector indexes as its model declares it, over
    `column` (default: the vector column itself) stored as `storage`, named `name` (default:
    its own)."""
    declared = next(index for index in table.model._meta.indexes if index.name == index_name)
    _path, args, kwargs = declared.deconstruct()
    kwargs["name"] = name or index_name
    if isinstance(declared, HnswIndex):
        kwargs["opclasses"] = [storage.opclass]
    elif not storage.covered:
        kwargs["include"] = [field for field in kwargs.get("include", []) if field != table.column]
    index = type(declared)(*args, **kwargs)
    with connections[using].schema_editor(collect_sql=True) as editor:
        sql = str(index.create_sql(table.model, editor, concurrently=concurrently))
    return sql.replace(f'"{table.column}"', f'"{column or table.column}"')


def holds_vectors(table: VectorTable, using: str = "default") -> bool:
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT EXISTS (SELECT 1 FROM {table.table} WHERE {table.column} IS NOT NULL)"
        )
        return bool(cursor.fetchone()[0])


def stored_vectors(using: str = "default") -> bool:
    """Some row of some table holds a vector."""
    return any(holds_vectors(table, using) for table in VECTOR_TABLES)


def vector_columns(using: str = "default") -> dict[str, VectorStorage | None]:
    return {
        table.name: column_storage(table.table, table.column, using=using)
        for table in VECTOR_TABLES
    }


def resize_vector_columns(storage: VectorStorage, *, using: str = "default") -> list[str]:
    """Give every vector column that holds no vector `storage`'s type, its indexes rebuilt
    (at once: there is nothing to index); the names of the columns changed. A column holding
    vectors is left as it is: only a live switch changes their model."""
    changed = []
    connection = connections[using]
    with as_owner(connection), connection.cursor() as cursor:
        for table in VECTOR_TABLES:
            current = column_storage(table.table, table.column, using=using)
            if current == storage or holds_vectors(table, using):
                continue
            for index in table.indexes:
                cursor.execute(f"DROP INDEX IF EXISTS {index}")
            cursor.execute(
                f"ALTER TABLE {table.table} ALTER COLUMN {table.column}"
                f" TYPE {storage.column_type} USING NULL"
            )
            if table.plain:
                cursor.execute(
                    f"ALTER TABLE {table.table} ALTER COLUMN {table.column} SET STORAGE PLAIN"
                )
            for index in table.indexes:
                cursor.execute(index_sql(table, index, storage, using=using))
            changed.append(table.name)
    return changed


def fit_vector_columns(using: str = "default", **kwargs: Any) -> None:
    """post_migrate: the vector columns holding no vector take the type of the store's model.
    On a store that holds no vector, that is the configured model, and it is recorded; on one
    that does, the recorded model (whether it is still the configured one is the start-up
    check's question)."""
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
    holding = stored_vectors(using)
    space = recorded if holding else configured
    if space is None:  # vectors of a model never recorded: nothing to size them by
        return

    changed = resize_vector_columns(storage_for(space.dimensions), using=using)
    if changed:
        logger.info("vector columns sized for %s: %s", space, ", ".join(changed))
    if not holding:
        embedding_space_record(space=configured, using=using)


def _sized(space: Any, using: str) -> bool:
    wanted = storage_for(space.dimensions)
    return all(storage == wanted for storage in vector_columns(using).values())
