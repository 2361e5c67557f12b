"""Ids a tenant sees (entities, relations, document chunks) no longer count every tenant's rows.

They came from one sequence per table shared by every project: a tenant that created two
entities a minute apart learned from the gap how many the others had created. A new id is now
a keyed permutation of the sequence's next value (`memory_permuted_id`: a 4-round Feistel
network over 52 bits, round keys drawn at random when this migration runs, so they differ per
installation), placed above 2^52: bijective, so two values never give one id; above every id
handed out before, so none collides with an older row; below 2^53, so every JSON reader
(JavaScript's doubles included) reads it exactly. Nothing above the database changes: ids stay
bigint. docs/security.md, "Ids".
"""

from __future__ import annotations

import secrets
from typing import Any

from django.db import migrations

TABLES = ("entities_entity", "entities_relation", "documents_documentchunk")
OFFSET = 2**52


def _functions_sql(keys: list[int]) -> str:
    """The permutation and its inverse (the sequence position of an id: imports that keep ids
    move the sequence past them). F(half, key) mixes one 26-bit half with a round key."""
    array = ", ".join(str(key) for key in keys)
    mix = "((({half} # keys[i]) * 1103515245 + 12345) >> 7) & 67108863"
    return f"""
CREATE OR REPLACE FUNCTION memory_permuted_id(n bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    keys bigint[] := ARRAY[{array}];
    l bigint := (n >> 26) & 67108863;
    r bigint := n & 67108863;
    t bigint;
BEGIN
    FOR i IN 1..4 LOOP
        t := l # ({mix.format(half="r")});
        l := r;
        r := t;
    END LOOP;
    RETURN {OFFSET} + ((l << 26) | r);
END $$;
CREATE OR REPLACE FUNCTION memory_permuted_id_position(id bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    keys bigint[] := ARRAY[{array}];
    l bigint := ((id - {OFFSET}) >> 26) & 67108863;
    r bigint := (id - {OFFSET}) & 67108863;
    t bigint;
BEGIN
    IF id < {OFFSET} THEN
        RETURN id;  -- handed out before the permutation: the sequence's own value
    END IF;
    FOR i IN REVERSE 4..1 LOOP
        t := r # ({mix.format(half="l")});
        r := l;
        l := t;
    END LOOP;
    RETURN (l << 26) | r;
END $$;
"""


def _forwards(apps: Any, schema_editor: Any) -> None:
    keys = [secrets.randbelow(2**26) for _ in range(4)]
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_functions_sql(keys))
        for table in TABLES:
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {table}")
            highest = cursor.fetchone()[0]
            cursor.execute(f"ALTER TABLE {table} ALTER COLUMN id DROP IDENTITY IF EXISTS")
            cursor.execute(f"DROP SEQUENCE IF EXISTS {table}_id_seq")
            cursor.execute(  # past 2^52 values the permutation would repeat: fail instead
                f"CREATE SEQUENCE {table}_id_seq MAXVALUE {OFFSET - 1} OWNED BY {table}.id"
            )
            cursor.execute(
                f"SELECT setval('{table}_id_seq', %s, %s)", [max(highest, 1), highest > 0]
            )
            cursor.execute(
                f"ALTER TABLE {table} ALTER COLUMN id "
                f"SET DEFAULT memory_permuted_id(nextval('{table}_id_seq'))"
            )


def _backwards(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(
                f"ALTER TABLE {table} ALTER COLUMN id SET DEFAULT nextval('{table}_id_seq')"
            )
        cursor.execute("DROP FUNCTION IF EXISTS memory_permuted_id(bigint) CASCADE")
        cursor.execute("DROP FUNCTION IF EXISTS memory_permuted_id_position(bigint)")


class Migration(migrations.Migration):
    dependencies = [("memoryplatform", "0002_composite_tenant_keys")]

    operations = [migrations.RunPython(_forwards, _backwards, elidable=False)]
