"""Running on a Citus cluster: every tenant table distributed by `project_id`, and what the
platform does differently when its database is a Citus coordinator (docs/scaling.md,
"Running on Citus").

- **Distribution** (`distribute`, `manage.py distribute`): the tables with a `project_id`
  column are distributed by it, all co-located with the first, so a project's rows of every
  table live on one node and joins between them stay there; `REFERENCE_TABLES` (the
  projects, and the API keys read by their prefix before the project is known) are copied
  to every node. Tables are taken in foreign-key order (a referenced table first, as Citus
  requires); Django's own tables, django-q2's, the OAuth tables and the limits cache stay on
  the coordinator. Idempotent: a table already distributed is left as it is, so run it
  again after a migration that adds a tenant table.
- **Row-level security**: the policy reads the scope with sub-selects (evaluated once per
  statement); Citus refuses sub-queries in policies of distributed tables, so `distribute`
  rewrites each one to call `current_setting` directly (`CONDITION`: the same rule, the
  setting read per row, which a plan on an index of `project_id` reads once anyway). The
  scope itself cannot be a session setting: Citus opens its own connections to the workers
  and does not forward a session's settings. On Citus the backend sends it with
  `SET LOCAL` in every transaction (`scope_statements`), with
  `citus.propagate_set_commands = 'local'`, which makes Citus send the transaction's
  `SET LOCAL`s to every worker connection the transaction uses. The runtime role logs in
  to the workers (Citus connects as the current user), so `distribute` gives it LOGIN.
- **Query settings**: pgvector's settings that the coordinator's connections carry in
  their startup options (`hnsw.ef_search`, iterative scans) are set on the database on
  every node, where the index scans run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from platformcore.db import rls

logger = logging.getLogger("memoryplatform.citus")

REFERENCE_TABLES = ("tenants_project", "tenants_apikey")
DEFAULT_SHARD_COUNT = 32

# the tenant policy without sub-selects (Citus: "Subqueries are not supported in policies
# on distributed tables")
CONDITION = (
    f"project_id = nullif(current_setting('{rls.PROJECT_SETTING}', true), '')::bigint "
    f"OR current_setting('{rls.ALL_SETTING}', true) = 'on'"
)

# tables already distributed or copied (a "local" Citus table is one Citus took into its
# metadata because of a foreign key to a reference table: it is still to be distributed)
_DISTRIBUTION = """
SELECT table_name::text, citus_table_type FROM citus_tables
WHERE citus_table_type IN ('distributed', 'reference')
"""


class NotCitus(Exception):
    """The database is not a Citus coordinator (no citus extension)."""


def is_citus(cursor: Any) -> bool:
    """Whether the connected database has the citus extension (a Citus coordinator)."""
    cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
    return cursor.fetchone() is not None


def scope_statements(scope: tuple[str, str], previous: tuple[str, str] | None) -> list[str]:
    """The `SET LOCAL` statements that put `scope` (rls.scope_values) on the current
    transaction, which held `previous` (None: not known). Each goes alone: Citus forwards a
    SET by sending the whole query string it came in, which must hold nothing else. A fresh
    transaction holds ('', '') and needs at most one."""
    project, every = scope
    if not project.isdigit() and project != "":
        raise ValueError(f"a project id is a number, not {project!r}")
    every = "on" if every == "on" else ""
    old = previous or ("?", "?")
    statements = []
    if project != old[0]:
        statements.append(f"SET LOCAL {rls.PROJECT_SETTING} = '{project}'")
    if every != old[1]:
        statements.append(f"SET LOCAL {rls.ALL_SETTING} = '{every}'")
    return statements


FRESH = ("", "")  # the scope of a transaction that set none


@dataclass
class Plan:
    """What `distribute` does, in order: reference tables, then distributed tables (the
    first is the one the others are co-located with)."""

    reference: list[str]
    distributed: list[str]
    local_referencing: list[str] = field(default_factory=list)

    def statements(self, shard_count: int = DEFAULT_SHARD_COUNT) -> list[str]:
        lines = [f"SELECT create_reference_table('{table}');" for table in self.reference]
        for i, table in enumerate(self.distributed):
            option = (
                f"shard_count => {shard_count}"
                if i == 0
                else f"colocate_with => '{self.distributed[0]}'"
            )
            lines.append(f"SELECT create_distributed_table('{table}', 'project_id', {option});")
        return lines


_FOREIGN_KEYS = """
SELECT t.relname, r.relname
FROM pg_constraint f
JOIN pg_class t ON t.oid = f.conrelid
JOIN pg_class r ON r.oid = f.confrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = current_schema() AND f.contype = 'f' AND t.oid <> r.oid
"""


def plan(cursor: Any) -> Plan:
    """The reference and distributed tables of the connected database, the distributed ones
    each after every table it references (ties by name), `memories_episode` first when it
    has no foreign key to another distributed table (it anchors the co-location)."""
    tenant = [row[0] for row in rls.tenant_tables(cursor)]
    cursor.execute(
        "SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relkind = 'r'",
        [list(REFERENCE_TABLES)],
    )
    present = {row[0] for row in cursor.fetchall()}
    reference = [table for table in REFERENCE_TABLES if table in present]
    pending = sorted(set(tenant) - set(reference))
    cursor.execute(_FOREIGN_KEYS)
    references: dict[str, set[str]] = {table: set() for table in pending}
    for table, target in cursor.fetchall():
        if table in references and target in references:
            references[table].add(target)
    ordered: list[str] = []
    while pending:
        ready = [table for table in pending if not references[table] - set(ordered)]
        if not ready:  # a cycle of foreign keys: Citus cannot order it either
            raise ValueError(f"foreign keys form a cycle among {', '.join(pending)}")
        first = "memories_episode" if "memories_episode" in ready and not ordered else ready[0]
        ordered.append(first)
        pending.remove(first)
    return Plan(reference=reference, distributed=ordered)


@dataclass
class Summary:
    reference: list[str] = field(default_factory=list)
    distributed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    nodes: int = 0
    shards: int = 0


def distribute(
    connection: Any,
    *,
    shard_count: int = DEFAULT_SHARD_COUNT,
    ef_search: int | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Summary:
    """Make the reference tables and distribute every other tenant table by project_id on
    the Citus coordinator `connection` is connected to (as the owner). Raises NotCitus on a
    database without the citus extension."""
    summary = Summary()
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        if not is_citus(cursor):
            raise NotCitus(
                "this database has no citus extension: `distribute` runs on a Citus "
                "coordinator (CREATE EXTENSION citus, workers added with citus_add_node; "
                "docs/scaling.md, 'Running on Citus')"
            )
        cursor.execute("SELECT count(*) FROM pg_dist_node WHERE isactive AND groupid <> 0")
        summary.nodes = cursor.fetchone()[0]
        if summary.nodes == 0:
            raise NotCitus("the Citus coordinator has no workers: add them with citus_add_node")
        cursor.execute(
            "SELECT 1 FROM pg_dist_node WHERE groupid = 0"
        )  # local tables referencing reference tables need the coordinator in the metadata
        if cursor.fetchone() is None:
            raise NotCitus(
                "the coordinator is not in Citus's metadata: run "
                "SELECT citus_set_coordinator_host('<its host>', <port>) on it first"
            )
        cursor.execute(_DISTRIBUTION)
        done = {row[0]: row[1] for row in cursor.fetchall()}
        steps = plan(cursor)
        todo = [t for t in steps.reference + steps.distributed if t not in done]
        for table in todo:
            if _rewrite_policy(cursor, table):
                summary.policies.append(table)
        if summary.policies:
            progress(f"row-level security policies without sub-selects: {len(summary.policies)}")
        role = connection.settings_dict.get("APP_ROLE")
        if role:
            cursor.execute(f'ALTER ROLE "{role}" LOGIN')  # Citus connects to workers as it
        # Making the projects a reference table would turn every local table referring to it
        # into a Citus local table, which may then neither refer to a distributed table nor
        # be distributed itself when it has an identity column: the foreign keys among the
        # tables still to place are taken off first and put back once every one is placed
        # (Citus then checks each shard by shard).
        keys = _foreign_keys_between(cursor, todo)
        for table, name, _definition in keys:
            cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
        for table in steps.reference:
            if table in done:
                summary.already.append(table)
                continue
            progress(f"reference table {table}")
            cursor.execute("SELECT create_reference_table(%s)", [table])
            summary.reference.append(table)
        anchor = steps.distributed[0] if steps.distributed else None
        for table in steps.distributed:
            if table in done:
                summary.already.append(table)
                continue
            progress(f"distributing {table} by project_id")
            if table == anchor:
                cursor.execute(
                    "SELECT create_distributed_table(%s, 'project_id', shard_count => %s)",
                    [table, shard_count],
                )
            else:
                cursor.execute(
                    "SELECT create_distributed_table(%s, 'project_id', colocate_with => %s)",
                    [table, anchor],
                )
            summary.distributed.append(table)
        if keys:
            progress(f"foreign keys between distributed tables: {len(keys)}")
        for table, name, definition in keys:
            cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')
        _query_settings(cursor, ef_search)
        _propagate_set_local(cursor)
        if anchor:
            cursor.execute(
                "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = %s::regclass", [anchor]
            )
            summary.shards = cursor.fetchone()[0]
    return summary


def _foreign_keys_between(cursor: Any, tables: list[str]) -> list[tuple[str, str, str]]:
    """(table, constraint, definition) of the foreign keys from one of `tables` to another."""
    cursor.execute(
        "SELECT t.relname, f.conname, pg_get_constraintdef(f.oid) FROM pg_constraint f "
        "JOIN pg_class t ON t.oid = f.conrelid JOIN pg_class r ON r.oid = f.confrelid "
        "JOIN pg_namespace n ON n.oid = t.relnamespace "
        "WHERE n.nspname = current_schema() AND f.contype = 'f' "
        "AND t.relname = ANY(%s) AND r.relname = ANY(%s) ORDER BY 1, 2",
        [tables, tables],
    )
    return [tuple(row) for row in cursor.fetchall()]


def _rewrite_policy(cursor: Any, table: str) -> bool:
    """Give `table`'s tenant policy the condition Citus accepts; False if it has none."""
    cursor.execute(
        "SELECT pg_get_expr(p.polqual, p.polrelid) FROM pg_policy p "
        "WHERE p.polrelid = %s::regclass AND p.polname = %s",
        [table, rls.POLICY],
    )
    row = cursor.fetchone()
    if row is None or "SELECT" not in row[0].upper():
        return False
    cursor.execute(f'ALTER POLICY {rls.POLICY} ON "{table}" USING ({CONDITION})')
    return True


def _query_settings(cursor: Any, ef_search: int | None) -> None:
    """pgvector's query settings as database defaults on every node: the index scans run
    on the workers, which never see the coordinator connection's startup options."""
    if ef_search is None:
        return
    cursor.execute("SELECT current_database()")
    database = cursor.fetchone()[0].replace('"', '""')
    for setting, value in (
        ("hnsw.ef_search", str(ef_search)),
        ("hnsw.iterative_scan", "relaxed_order"),
    ):  # Citus sends ALTER DATABASE ... SET on to every node
        cursor.execute(f"ALTER DATABASE \"{database}\" SET {setting} = '{value}'")


def _propagate_set_local(cursor: Any) -> None:
    """Every later session of the database forwards its `SET LOCAL`s (the row-level security
    scope) to the workers; this one too."""
    cursor.execute("SELECT current_database()")
    database = cursor.fetchone()[0].replace('"', '""')
    cursor.execute(f"ALTER DATABASE \"{database}\" SET citus.propagate_set_commands = 'local'")
    cursor.execute("SET citus.propagate_set_commands = 'local'")


def distribution(cursor: Any) -> dict[str, str]:
    """{table: 'distributed' | 'reference' | 'local'} of the Citus tables."""
    cursor.execute("SELECT table_name::text, citus_table_type FROM citus_tables")
    return {name: kind for name, kind in cursor.fetchall()}


_SHARD_STATISTICS = """
SELECT json_build_object('rows', c.reltuples, 'values', s.{values}::text::text[],
                         'freqs', s.{freqs})
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname
 AND s.attname = '{column}'
WHERE c.oid = '%s'::regclass
"""


def shard_statistics(
    cursor: Any, table: str, column: str, *, elements: bool = False
) -> tuple[float, dict[str, float]]:
    """(the table's estimated rows, {value: estimated rows holding it}) from the planner's
    statistics of every shard of a distributed table: on the coordinator the table is an
    empty shell whose own statistics say nothing. `elements`: the most common elements of
    an array or tsvector column, else its most common values. Run as the owner."""
    sql = _SHARD_STATISTICS.format(
        values="most_common_elems" if elements else "most_common_vals",
        freqs="most_common_elem_freqs" if elements else "most_common_freqs",
        column=column,
    )
    cursor.execute("SELECT success, result FROM run_command_on_shards(%s, %s)", [table, sql])
    total = 0.0
    found: dict[str, float] = {}
    for success, result in cursor.fetchall():
        if not success or not result:
            continue
        shard = json.loads(result)
        rows = max(float(shard["rows"] or 0.0), 0.0)
        total += rows
        for value, freq in zip(shard["values"] or [], shard["freqs"] or [], strict=False):
            found[value] = found.get(value, 0.0) + freq * rows
    return total, found
