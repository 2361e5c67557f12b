"""Moving a live store to another embedding model: `manage.py reembed --model NAME`.

Searches answer from the old vectors until every row of every vector table has a new one and
its indexes are built; then the platform switches in one step. The stages, each resumable
(the "next" `EmbeddingSpace` row keeps where a switch is; a killed run continues where it
stopped when started again with the same model):

1. **start**: the target model is loaded and asked for one vector (a model that cannot be
   loaded is an error before anything changes); each vector column (vector_schema.py's
   VECTOR_TABLES: a memory's content and summary, an entity's, a chunk's) gets a shadow
   column (`embedding_next`, `summary_embedding_next`) of the target's type and a trigger
   that clears it when the text it embeds changes (a memory updated or summarised meanwhile
   is embedded again).
2. **filling**: the rows lacking a new vector are embedded in batches, keyset-paged, and
   written only if their text is still the one embedded; passes repeat until none is left,
   so memories stored meanwhile get their second vector from the switch within a pass (the
   write path is not slowed by a second model).
3. **indexing**: the shadow columns' indexes (HNSW, the users' covering index) are built
   concurrently beside the live ones, from the models' own definitions.
4. **switching**: the switch is announced and given two recheck periods
   (MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS) for every process to see it; from then on a
   write embeds under the switch's advisory lock, shared, reading the store's model afresh
   (memories.services.embedding_space.store_embedder_for_write). One transaction then takes
   that lock alone (waiting for such writes), locks the tables, embeds the last rows written
   meanwhile, drops the old columns and indexes, renames the new ones into their places and
   records the new model; a search whose query was embedded with the old model
   just before is answered again with the new one (memories.selectors.search.semantic).
5. **grace**: for two more recheck periods, a trigger notes the rows whose vector is written
   (by a request that had embedded just before the switch); they are then embedded again
   with the new model, and the trigger is dropped.

`switch_abort` drops the shadow columns, indexes and triggers of an unfinished switch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from maintenance.vector_schema import VECTOR_TABLES, VectorTable, index_sql
from memories.embeddings import Embedder, EmbedderSpec, make_embedder
from memories.models import EmbeddingSpace
from memories.services.embedding_space import (
    SWITCH_LOCK,
    Space,
    followed,
    recorded_space,
    same_space,
    space_of,
)
from memories.vector_storage import VectorStorage, storage_for
from platformcore.db.rls import as_owner
from platformcore.lib.errors import Conflict, InvalidInput, ProviderError
from platformcore.lib.vectors import vector_literal

BATCH = 64
TOUCHED = "memories_embedding_switch_touched"
Progress = Callable[..., object]


@dataclass
class SwitchReport:
    source: str
    target: str
    model_name: str
    embedded: dict[str, int] = field(default_factory=dict)
    stragglers: int = 0  # embedded under the switch's lock
    touched: int = 0  # embedded again after it
    index_seconds: float = 0.0
    seconds: float = 0.0
    switched: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_space(spec: EmbedderSpec) -> tuple[Space, Embedder]:
    """The target's space, after one real embedding: a model that cannot be loaded or a
    server that cannot be reached is an InvalidInput naming it, before anything changes."""
    embedder = make_embedder(spec)
    try:
        vector = embedder.embed_query("a first sentence to check the model with")
        space = space_of(spec, embedder)
    except ProviderError as exc:
        message = f"the embedding model {spec.model_name!r} cannot be used: {exc}"
        raise InvalidInput(message, fields={"model": [message]}) from exc
    if len(vector) != space.dimensions:
        message = f"{spec.model_name!r} gave {len(vector)} dimensions, not {space.dimensions}"
        raise InvalidInput(message, fields={"model": [message]})
    storage_for(space.dimensions)  # more than HNSW can index: ImproperlyConfigured
    return space, embedder


def switch_in_progress() -> Space | None:
    row = EmbeddingSpace.objects.filter(key="next").first()
    return Space.of(row) if row else None


def embeddings_switch(*, spec: EmbedderSpec, progress: Progress | None = None) -> SwitchReport:
    """Move every stored vector to `spec`'s model while searches go on (the stages above);
    resumes a switch to the same model, refuses one to another while it is unfinished."""
    started = time.perf_counter()
    if _grace_left() and (current := recorded_space()) is not None:  # a killed run's
        _finish_grace(current, progress)
    current = recorded_space()
    target, embedder = target_space(spec)
    report = SwitchReport(str(current), str(target), target.model_name)
    pending = switch_in_progress()
    if pending is not None and not same_space(pending, target):
        raise Conflict(
            f"a switch to {pending} is under way: finish it with reembed --model "
            f"{pending.model_name}, or drop it with reembed --abort"
        )
    if pending is None and current is not None and same_space(current, target):
        report.seconds = round(time.perf_counter() - started, 3)
        return report  # nothing to move (a finished switch, run again)
    storage = storage_for(target.dimensions)
    _start(target, storage)
    report.embedded = _fill_until_quiet(embedder, storage, progress)
    index_started = time.perf_counter()
    _stage("indexing")
    _build_indexes(storage, progress)
    report.index_seconds = round(time.perf_counter() - index_started, 3)
    report.stragglers = _switch(target, embedder, storage)
    report.switched = True
    report.touched = _finish_grace(target, progress, embedder)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def switch_abort() -> bool:
    """Drop an unfinished switch's shadow columns, indexes and triggers; False if none."""
    pending = switch_in_progress()
    with as_owner(connection), connection.cursor() as cursor:
        for table in VECTOR_TABLES:
            for index in table.indexes:
                cursor.execute(f"DROP INDEX IF EXISTS {index}_next")
            _drop_trigger(cursor, table, _stale(table))
            cursor.execute(f"ALTER TABLE {table.table} DROP COLUMN IF EXISTS {table.shadow}")
    EmbeddingSpace.objects.filter(key="next").delete()
    return pending is not None


# --- stages -------------------------------------------------------------------------------


def _start(target: Space, storage: VectorStorage) -> None:
    EmbeddingSpace.objects.get_or_create(
        key="next",
        defaults={
            "provider": target.provider,
            "model_name": target.model_name,
            "dimensions": target.dimensions,
            "options": target.options,
            "stage": "filling",
        },
    )
    with as_owner(connection), connection.cursor() as cursor:
        for table in VECTOR_TABLES:
            shadow = table.shadow
            cursor.execute(
                f"ALTER TABLE {table.table} ADD COLUMN IF NOT EXISTS {shadow} {storage.column_type}"
            )
            if table.plain:
                cursor.execute(f"ALTER TABLE {table.table} ALTER COLUMN {shadow} SET STORAGE PLAIN")
            changed = " OR ".join(
                f"NEW.{column} IS DISTINCT FROM OLD.{column}" for column in table.text_columns
            )
            _create_trigger(
                cursor,
                table,
                _stale(table),
                f"IF {changed} THEN NEW.{shadow} := NULL; END IF; RETURN NEW;",
                f"BEFORE UPDATE ON {table.table}",
            )


def _stale(table: VectorTable) -> str:
    """The trigger that clears the shadow when the text it embeds changes."""
    return f"{table.shadow}_stale"


def _touched(table: VectorTable) -> str:
    """The trigger that notes the rows whose vector is written in the grace after the switch."""
    return f"{table.column}_touched"


def _create_trigger(cursor: Any, table: VectorTable, name: str, body: str, when: str) -> None:
    function = f"{table.table}_{name}"  # functions are per schema, not per table
    cursor.execute(
        f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql"
        f" AS $$ BEGIN {body} END $$"
    )
    cursor.execute(
        f"CREATE OR REPLACE TRIGGER {name} {when} FOR EACH ROW EXECUTE FUNCTION {function}()"
    )


def _drop_trigger(cursor: Any, table: VectorTable, name: str) -> None:
    cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table.table}")
    cursor.execute(f"DROP FUNCTION IF EXISTS {table.table}_{name}()")


def _stage(stage: str, **options: Any) -> None:
    row = EmbeddingSpace.objects.get(key="next")
    row.stage = stage
    row.options = {**row.options, **options}
    row.save(update_fields=["stage", "options"])


def _fill_until_quiet(
    embedder: Any, storage: VectorStorage, progress: Progress | None
) -> dict[str, int]:
    """Passes over every table until one finds no row without a new vector."""
    done: dict[str, int] = {}
    while True:
        filled = _fill(embedder, storage, progress)
        for name, count in filled.items():
            done[name] = done.get(name, 0) + count
        if not any(filled.values()):
            return done


def _fill(embedder: Any, storage: VectorStorage, progress: Progress | None) -> dict[str, int]:
    filled = {}
    for table in VECTOR_TABLES:
        text = table.text_of()
        missing = f"FROM {table.table} WHERE {table.shadow} IS NULL AND {table.live}"
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) {missing}")
            total = cursor.fetchone()[0]
        filled[table.name] = 0
        if not total:
            continue
        last = None
        while True:
            after = "" if last is None else "AND id > %s "
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT id, {text} {missing} {after}ORDER BY id LIMIT %s",
                    [last, BATCH] if last is not None else [BATCH],
                )
                rows = cursor.fetchall()
            if not rows:
                break
            last = rows[-1][0]
            filled[table.name] += _write(table, storage, embedder, rows)
            if progress:
                progress(table.name, len(rows), total)
    return filled


def _write(table: VectorTable, storage: VectorStorage, embedder: Any, rows: list[Any]) -> int:
    """The new vectors of `rows` (id, text), kept only where the text is still that one."""
    vectors = embedder.embed_batch([row[1] or "" for row in rows])
    text = table.text_of("t")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table.table} AS t SET {table.shadow} = v.vector FROM unnest("
            f"%s::{_pk(table)}[], %s::text[], %s::{storage.kind}[]) AS v(id, text, vector)"
            f" WHERE t.id = v.id AND {text} IS NOT DISTINCT FROM v.text",
            [[r[0] for r in rows], [r[1] for r in rows], [vector_literal(v) for v in vectors]],
        )
        return cursor.rowcount


def _pk(table: VectorTable) -> str:
    return str(table.model._meta.pk.db_type(connection))  # uuid, bigint


def _build_indexes(storage: VectorStorage, progress: Progress | None) -> None:
    """The shadow column's indexes, concurrently (reads and writes go on); an index a killed
    build left invalid is built again."""
    with as_owner(connection), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [_build_memory()])
        for table in VECTOR_TABLES:
            for index in table.indexes:
                name = f"{index}_next"
                cursor.execute(
                    "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                    " WHERE c.relname = %s",
                    [name],
                )
                row = cursor.fetchone()
                if row is not None and row[0]:
                    continue
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
                cursor.execute(
                    index_sql(
                        table, index, storage, column=table.shadow, name=name, concurrently=True
                    )
                )
                if progress:
                    progress("indexes", 1, sum(len(t.indexes) for t in VECTOR_TABLES))


def _build_memory() -> str:
    wanted = settings.MEMORY_HNSW_BUILD_MEMORY_MB
    return f"{wanted}MB" if wanted else "64MB"


def _switch(target: Space, embedder: Any, storage: VectorStorage) -> int:
    """Announce the switch, give every process time to see it, then swap the columns in one
    transaction that waits for writes embedding meanwhile (the switch lock) and holds them
    and searches off until it commits."""
    _stage("switching")
    time.sleep(2 * settings.MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS + 0.2)
    tables = ", ".join(dict.fromkeys(table.table for table in VECTOR_TABLES))
    with as_owner(connection), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [SWITCH_LOCK])
        cursor.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")
        stragglers = sum(_fill(embedder, storage, None).values())
        # A straggler whose content and summary are both embedded here is updated twice in
        # this transaction, which queues its deferred key checks; ALTER TABLE refuses a
        # table with pending trigger events, so they run now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {TOUCHED} (tbl text, id text)")
        for table in VECTOR_TABLES:
            for index in table.indexes:
                cursor.execute(f"DROP INDEX IF EXISTS {index}")
            _drop_trigger(cursor, table, _stale(table))
            cursor.execute(f"ALTER TABLE {table.table} DROP COLUMN {table.column}")
            cursor.execute(
                f"ALTER TABLE {table.table} RENAME COLUMN {table.shadow} TO {table.column}"
            )
            for index in table.indexes:
                cursor.execute(f"ALTER INDEX {index}_next RENAME TO {index}")
            _create_trigger(
                cursor,
                table,
                _touched(table),
                f"INSERT INTO {TOUCHED} VALUES ('{table.name}', NEW.id::text); RETURN NULL;",
                f"AFTER INSERT OR UPDATE OF {table.column} ON {table.table}",
            )
        row = EmbeddingSpace.objects.get(key="default")
        row.provider, row.model_name, row.dimensions = (
            target.provider,
            target.model_name,
            target.dimensions,
        )
        row.options, row.generation = target.options, row.generation + 1
        row.save()
        EmbeddingSpace.objects.filter(key="next").delete()
    followed.refresh(force=True)
    return stragglers


def _grace_left() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [TOUCHED])
        return bool(cursor.fetchone()[0])


def _finish_grace(target: Space, progress: Progress | None, embedder: Any = None) -> int:
    """After two recheck periods, the rows written since the switch embedded again with the
    new model (a request that embedded with the old one just before it wrote after it)."""
    time.sleep(2 * settings.MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS + 0.2)
    embedder = embedder or make_embedder(target.spec)
    storage = storage_for(target.dimensions)
    total = 0
    with as_owner(connection), connection.cursor() as cursor:
        for table in VECTOR_TABLES:
            _drop_trigger(cursor, table, _touched(table))
        for table in VECTOR_TABLES:
            cursor.execute(
                f"SELECT id, {table.text_of()} FROM {table.table} WHERE {table.live} AND id::text"
                f" IN (SELECT id FROM {TOUCHED} WHERE tbl = %s)",
                [table.name],
            )
            rows = cursor.fetchall()
            for at in range(0, len(rows), BATCH):
                batch = rows[at : at + BATCH]
                vectors = embedder.embed_batch([row[1] or "" for row in batch])
                cursor.execute(
                    f"UPDATE {table.table} AS t SET {table.column} = v.vector"
                    f" FROM unnest(%s::{_pk(table)}[],"
                    f" %s::{storage.kind}[]) AS v(id, vector) WHERE t.id = v.id",
                    [[row[0] for row in batch], [vector_literal(v) for v in vectors]],
                )
                total += len(batch)
                if progress:
                    progress("after the switch", len(batch), len(rows))
        cursor.execute(f"DROP TABLE IF EXISTS {TOUCHED}")
    return total
