"""Citus can distribute every tenant table by `project_id`: proved from the live schema.

Citus distributes a table by one column and enforces constraints per shard, so a table can be
distributed by `project_id` only if its primary key and every unique constraint or index
include `project_id`, and every foreign key to another distributed table carries `project_id`
on both sides (co-located shards). A distributed table may also reference a reference table
(a copy on every node), never a table left on the coordinator; a reference table may not
reference a distributed one, nor may a table left on the coordinator.

The reference tables are declared by the `create_reference_table` calls of the SQL block in
docs/scaling.md ("Citus: distributing by project"); the same block's
`create_distributed_table` calls must name exactly the other tenant tables (those with a
`project_id` column). Every one of them must be free of blockers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import Count

from memories.models import Episode, Memory, MemoryHistory
from tenants.services import project_create

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


def tenant_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(_TENANT_TABLES)
        return [row[0] for row in cursor.fetchall()]


def citus_blockers(reference: set[str]) -> dict[str, list[str]]:
    """{table: what keeps Citus from distributing the tenant tables by project_id, with the
    tables in `reference` made reference tables}; only tables with a blocker are listed."""
    distributed = set(tenant_tables()) - reference
    with connection.cursor() as cursor:
        cursor.execute(_UNIQUE)
        unique = cursor.fetchall()
        cursor.execute(_FOREIGN_KEYS)
        foreign = cursor.fetchall()
    found: dict[str, list[str]] = {}
    for table, _index, primary, columns in unique:
        if table in distributed and "project_id" not in columns:
            kind = "primary key" if primary else "unique"
            found.setdefault(table, []).append(f"{kind} ({', '.join(columns)})")
    for _name, table, target, columns, target_columns in foreign:
        blocker = _foreign_key_blocker(
            table, target, columns, target_columns, distributed, reference
        )
        if blocker:
            found.setdefault(table, []).append(blocker)
    return {table: sorted(blockers) for table, blockers in sorted(found.items())}


def _foreign_key_blocker(
    table: str,
    target: str,
    columns: list[str],
    target_columns: list[str],
    distributed: set[str],
    reference: set[str],
) -> str | None:
    key = f"foreign key ({', '.join(columns)}) -> {target}"
    if table in distributed and target in distributed:
        pairs = dict(zip(columns, target_columns, strict=True))
        return None if pairs.get("project_id") == "project_id" else f"{key}: not by project"
    if table in distributed and target not in reference:
        return f"{key}: a table left on the coordinator"
    if table not in distributed and target in distributed:
        kind = "reference" if table in reference else "coordinator"
        return f"{key}: a {kind} table referencing a distributed one"
    return None


def documented_statements() -> tuple[list[str], list[str]]:
    """(reference tables, distributed tables) as the SQL block of docs/scaling.md's Citus
    section names them, in its order."""
    text = DOC.read_text()
    block = re.search(r"```sql\n((?:(?!```).)*create_distributed_table.*?)```", text, re.S)
    assert block, "docs/scaling.md has no ```sql block with create_distributed_table"
    sql = block.group(1)
    reference = re.findall(r"create_reference_table\('(\w+)'\)", sql)
    distributed = re.findall(r"create_distributed_table\('(\w+)', 'project_id'", sql)
    assert sql.count("create_distributed_table(") == len(distributed), "each by project_id"
    colocated = re.findall(r"colocate_with => '(\w+)'", sql)
    assert colocated == [distributed[0]] * (len(distributed) - 1), "all co-located"
    return reference, distributed


@pytest.mark.django_db
def test_every_tenant_table_is_distributable_by_project() -> None:
    reference, _distributed = documented_statements()
    assert citus_blockers(set(reference)) == {}


@pytest.mark.django_db
def test_the_documented_statements_distribute_every_other_tenant_table_in_order() -> None:
    reference, distributed = documented_statements()
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relname = ANY(%s)", [reference])
        assert sorted(row[0] for row in cursor.fetchall()) == sorted(reference)
        cursor.execute(_FOREIGN_KEYS)
        foreign = cursor.fetchall()
    assert "tenants_apikey" in reference  # read by its prefix before the project is known
    assert sorted(distributed) == sorted(set(tenant_tables()) - set(reference))
    position = {table: i for i, table in enumerate(distributed)}
    for name, table, target, _columns, _target_columns in foreign:
        if table in position and target in position:  # Citus needs the referenced one first
            assert position[target] < position[table], f"{name}: {target} after {table}"


@pytest.mark.django_db
def test_a_blocker_is_found_where_a_key_lacks_the_project() -> None:
    """The check sees what it must: take one table out of the reference list, and its own
    keys and the table that refers to it become blockers."""
    reference, _distributed = documented_statements()
    found = citus_blockers(set(reference) - {"tenants_apikey"})
    assert "primary key (id)" in found["tenants_apikey"]
    assert "unique (prefix)" in found["tenants_apikey"]
    assert any("a coordinator table referencing" in b for b in found["tenants_oauth_keyholder"])


def _refused_by(constraint: str, write: Callable[[], object]) -> None:
    """`write` fails the check of `constraint` (deferred, as Django's keys: checked here,
    not at the commit), and leaves nothing behind."""
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        write()
        connection.check_constraints()


@pytest.mark.django_db
def test_a_row_pointing_at_another_projects_row_is_refused_by_the_database() -> None:
    alpha, beta = project_create(slug="alpha"), project_create(slug="beta")
    memory = Memory.objects.create(project=alpha, content="alpha's", content_hash="a", user_id="u")
    _refused_by(
        "memories_memoryhistory_memory_id_project_fk",
        lambda: MemoryHistory.objects.create(project=beta, memory=memory, event="ADD"),
    )
    episode = Episode.objects.create(project=beta, user_id="u")
    _refused_by(
        "memories_memory_episode_id_project_fk",
        lambda: Memory.objects.filter(pk=memory.pk).update(episode=episode),
    )
    MemoryHistory.objects.create(project=alpha, memory=memory, event="ADD")
    connection.check_constraints()  # the same row in its own project is accepted


@pytest.mark.django_db
def test_a_query_grouped_by_a_models_key_groups_by_its_whole_key_in_the_database() -> None:
    """Django groups an aggregate by the model's key, `id`; the table's key is `(id,
    project_id)`, so the backend groups by both (platformcore/db/postgresql/compiler.py)."""
    alpha = project_create(slug="alpha")
    episode = Episode.objects.create(project=alpha, user_id="u")
    Memory.objects.create(
        project=alpha, content="x", content_hash="x", user_id="u", episode=episode
    )
    counted = Episode.objects.annotate(n=Count("memories"))
    assert '"memories_episode"."project_id"' in str(counted.query).split("GROUP BY")[1]
    assert [(row.pk, row.n) for row in counted] == [(episode.pk, 1)]


@pytest.mark.django_db
def test_the_documented_statements_are_what_manage_py_distribute_runs() -> None:
    from platformcore.db import citus

    text = DOC.read_text()
    block = re.search(r"```sql\n((?:(?!```).)*create_distributed_table.*?)```", text, re.S)
    assert block
    documented = [line for line in block.group(1).splitlines() if line.startswith("SELECT")]
    with connection.cursor() as cursor:
        assert documented == citus.plan(cursor).statements()
