"""Which tenant tables Citus could distribute by `project_id` today, read from the live schema.

Citus distributes a table by one column and enforces constraints per shard, so a table can be
distributed by `project_id` only if its primary key and every unique constraint or index
include `project_id`, and every foreign key to another tenant table carries `project_id` on
both sides (co-located shards). Tables without `project_id` become reference tables (a copy
on every node); a distributed table may reference them, but they may not reference a
distributed one.

The blockers found must equal the list in docs/scaling.md ("Citus readiness"), so the
document and the schema cannot drift apart: change one, change the other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection

DOC = Path(__file__).resolve().parents[1] / "docs" / "scaling.md"

_TENANT_TABLES = """
SELECT c.relname
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'project_id' AND NOT a.attisdropped
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
ORDER BY c.relname
"""

# primary keys, unique constraints and unique indexes (partial ones too), with their columns
_UNIQUE = """
SELECT t.relname, i.relname, x.indisprimary,
       ARRAY(SELECT a.attname FROM unnest(x.indkey) AS k(n)
             JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.n) AS columns
FROM pg_index x
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = current_schema() AND x.indisunique
ORDER BY 1, 2
"""

_FOREIGN_KEYS = """
SELECT f.conname, t.relname, r.relname,
       ARRAY(SELECT a.attname FROM unnest(f.conkey) WITH ORDINALITY AS k(n, i)
             JOIN pg_attribute a ON a.attrelid = f.conrelid AND a.attnum = k.n ORDER BY k.i),
       ARRAY(SELECT a.attname FROM unnest(f.confkey) WITH ORDINALITY AS k(n, i)
             JOIN pg_attribute a ON a.attrelid = f.confrelid AND a.attnum = k.n ORDER BY k.i)
FROM pg_constraint f
JOIN pg_class t ON t.oid = f.conrelid
JOIN pg_class r ON r.oid = f.confrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = current_schema() AND f.contype = 'f'
ORDER BY 2, 1
"""


def citus_blockers() -> dict[str, list[str]]:
    """{tenant table: what keeps it from being distributed by project_id}, every tenant
    table listed (an empty list: distributable as it is)."""
    with connection.cursor() as cursor:
        cursor.execute(_TENANT_TABLES)
        tenant = [row[0] for row in cursor.fetchall()]
        cursor.execute(_UNIQUE)
        unique = cursor.fetchall()
        cursor.execute(_FOREIGN_KEYS)
        foreign = cursor.fetchall()
    found: dict[str, list[str]] = {table: [] for table in tenant}
    for table, _index, primary, columns in unique:
        if table in found and "project_id" not in columns:
            kind = "primary key" if primary else "unique"
            found[table].append(f"{kind} ({', '.join(columns)})")
    for _name, table, target, columns, target_columns in foreign:
        pairs = dict(zip(columns, target_columns, strict=True))
        if table in found and target in found and pairs.get("project_id") != "project_id":
            found[table].append(f"foreign key ({', '.join(columns)}) -> {target}")
        elif table not in found and target in found:
            found[target].append(f"referenced by non-tenant table {table}")
    return {table: sorted(blockers) for table, blockers in found.items()}


def documented_blockers() -> dict[str, list[str]]:
    """The ```citus-blockers block of docs/scaling.md: `table: blocker; blocker` per line
    (`table: -` for a table with none)."""
    block = re.search(r"```citus-blockers\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert block, "docs/scaling.md has no ```citus-blockers block"
    documented = {}
    for line in block.group(1).strip().splitlines():
        table, _, rest = line.partition(":")
        rest = rest.strip()
        documented[table.strip()] = [] if rest == "-" else sorted(rest.split("; "))
    return documented


def render(blockers: dict[str, list[str]]) -> str:
    """The block as docs/scaling.md should hold it (printed when the test fails)."""
    lines = [f"{table}: {'; '.join(found) if found else '-'}" for table, found in blockers.items()]
    return "```citus-blockers\n" + "\n".join(lines) + "\n```"


@pytest.mark.django_db
def test_the_documented_citus_blockers_are_those_of_the_schema() -> None:
    found = citus_blockers()
    assert documented_blockers() == found, "docs/scaling.md should say:\n" + render(found)
