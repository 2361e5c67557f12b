"""Set-wise UPDATE of many rows, each with its own values, in one statement.

Django's `bulk_update` writes `SET f = CASE WHEN pk = 1 THEN … WHEN pk = 2 THEN … END` for
every field: PostgreSQL walks that CASE for each row it updates (quadratic in the batch) and
Django builds an expression tree per value. `update_rows` sends one array per column instead
and joins them to the table by primary key:

    UPDATE t SET f = v.f, … FROM unnest(%s::uuid[], %s::double precision[], …) AS v(pk, f, …)
    WHERE t.pk = v.pk

Values are prepared by the fields themselves (`get_db_prep_save`); JSON and array fields
travel as JSON text, since PostgreSQL arrays cannot nest per row. Like `bulk_update`, no
`save()` and no signals; a row that does not exist is skipped.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db import connections, models, transaction
from django.db.models import JSONField

from platformcore.lib.project_scope import current_scope
from platformcore.lib.vectors import vector_literal


def update_rows(
    objs: Sequence[models.Model], fields: Sequence[str], *, using: str = "default"
) -> int:
    """Write `fields` of each of `objs` (same model) in one UPDATE; returns rows updated."""
    if not objs:
        return 0
    model = type(objs[0])
    connection = connections[using]
    pk = model._meta.pk
    columns = [pk, *(model._meta.get_field(name) for name in fields)]
    arrays, casts, assignments = [], [], []
    for index, field in enumerate(columns):
        values = [_db_value(field, getattr(obj, field.attname), connection) for obj in objs]
        arrays.append(values)
        casts.append(f"%s::{_array_type(field, connection)}")
        if index:
            column = connection.ops.quote_name(field.column)
            assignments.append(f"{column} = {_read(field, index, connection)}")
    aliases = ", ".join(f"c{i}" for i in range(len(columns)))
    table = connection.ops.quote_name(model._meta.db_table)
    sql = (
        f"UPDATE {table} AS t SET {', '.join(assignments)} "
        f"FROM unnest({', '.join(casts)}) AS v({aliases}) "
        f"WHERE t.{connection.ops.quote_name(pk.column)} = v.c0"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, arrays)
        return cursor.rowcount


def _travels_as_json(field: models.Field) -> bool:
    return isinstance(field, JSONField | ArrayField)


def _array_type(field: models.Field, connection: Any) -> str:
    if _travels_as_json(field):
        return "text[]"
    if field.get_internal_type() == "VectorField":
        return "vector[]"
    return f"{field.cast_db_type(connection)}[]"


def _read(field: models.Field, index: int, connection: Any) -> str:
    """The expression reading column `index` of `v` as the field's type."""
    if isinstance(field, JSONField):
        return f"v.c{index}::jsonb"
    if isinstance(field, ArrayField):
        return (
            f"ARRAY(SELECT jsonb_array_elements_text(v.c{index}::jsonb))"
            f"::{field.cast_db_type(connection)}"
        )
    return f"v.c{index}"


def _db_value(field: models.Field, value: Any, connection: Any) -> Any:
    if value is None:
        return None
    if isinstance(field, JSONField):
        return json.dumps(value, cls=field.encoder)
    if isinstance(field, ArrayField):
        return json.dumps(list(value))
    if field.get_internal_type() == "VectorField":
        return vector_literal(value)
    return field.get_db_prep_save(value, connection)


_TYPES_SQL = """
SELECT string_agg(atttypid::text || ':' || atttypmod::text, ',' ORDER BY attnum)
FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped
"""


def insert_rows(objs: Sequence[models.Model], *, using: str = "default") -> None:
    """INSERT `objs` (same model, primary keys set, as `_build` makes them) with COPY: what
    `bulk_create` does for such rows, without compiling one statement of all their values
    (for 1,000 memories with vectors, ~0.7 s of Python before the statement reaches
    PostgreSQL). Constraint violations raise IntegrityError, as an INSERT would. PostgreSQL
    refuses COPY into a table under row-level security, so there the rows are copied into a
    staging table of the session's own and moved with one INSERT … SELECT, which the tenant
    policy checks row by row."""
    if not objs:
        return
    model = type(objs[0])
    connection = connections[using]
    fields = [f for f in model._meta.concrete_fields if not f.generated]
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    columns_of = [(field.attname, _copy_value(field, connection)) for field in fields]
    if not connection.settings_dict.get("APP_ROLE"):
        with connection.cursor() as cursor:
            _copy(cursor, table, columns, objs, columns_of)
        writes = getattr(connection, "writes", None)  # COPY passes by the execute wrappers
        if writes is not None:
            writes.note(f"COPY {table}", current_scope(), connection)
    elif getattr(connection, "is_citus", False):
        # Citus sends an INSERT ... SELECT from a table that is not distributed through the
        # coordinator with COPY, which row-level security refuses there too: VALUES lists
        with transaction.atomic(using=using, savepoint=False):
            model._default_manager.using(using).bulk_create(objs, batch_size=500)
    else:  # PostgreSQL refuses COPY into a table under row-level security: through a staging table
        with transaction.atomic(using=using, savepoint=False), connection.cursor() as cursor:
            # named by the table's column types too: a vector column's type follows the
            # embedding model, and a session's staging table keeps the types it was made with
            cursor.execute(_TYPES_SQL, [model._meta.db_table])
            signature = f"{columns}|{cursor.fetchone()[0]}"
            staging = f"pg_temp.bulk_{model._meta.db_table}_{zlib.crc32(signature.encode()):x}"
            cursor.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {staging} AS "
                f"SELECT {columns} FROM {table} WITH NO DATA"
            )
            _copy(cursor, staging, columns, objs, columns_of)
            cursor.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {staging}")
            cursor.execute(f"TRUNCATE {staging}")
    for obj in objs:
        obj._state.adding, obj._state.db = False, using


def _copy(
    cursor: Any, table: str, columns: str, objs: Sequence[models.Model], columns_of: Any
) -> None:
    with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for obj in objs:
            copy.write_row([prepare(getattr(obj, name)) for name, prepare in columns_of])


def _copy_value(field: models.Field, connection: Any) -> Any:
    """How a value of `field` is written to COPY."""
    if isinstance(field, JSONField):
        return lambda value: None if value is None else json.dumps(value, cls=field.encoder)
    if field.get_internal_type() == "VectorField":
        return lambda value: None if value is None else vector_literal(value)
    return lambda value: field.get_db_prep_save(value, connection)
