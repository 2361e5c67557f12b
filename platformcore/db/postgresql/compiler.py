"""Django's PostgreSQL compilers, grouping by a tenant table's whole primary key.

A query that aggregates over a model's rows (`annotate(Count(...))`) is grouped by the
model's primary key alone: Django relies on PostgreSQL letting a table's other columns be
selected when its primary key is grouped by (`allows_group_by_selected_pks`). A tenant
table's key in the database is `(id, project_id)` (memoryplatform/migrations/
0002_composite_tenant_keys.py, Citus-ready) while its model's primary key is `id`, so
`GROUP BY id` no longer covers the key and PostgreSQL refuses the other columns. Here the
table's `project_id` is grouped by beside its id: the whole key, and the same groups (an id
is one row).

On a Citus coordinator (platformcore/db/citus.py), a join between two tenant tables also
matches their `project_id` (`ON b.id = a.memory_id AND b.project_id = a.project_id`): both
tables are distributed by it, and only a join on the distribution column lets Citus keep a
project's query on the one shard that holds the project (a join on the id alone would need
rows moved between nodes). Every reference between tenant rows stays within its project
(the composite foreign keys), so the rows joined are the same.
"""

from __future__ import annotations

import functools
from typing import Any

from django.apps import apps
from django.db import models
from django.db.backends.postgresql import compiler
from django.db.models.sql import compiler as base_compiler
from django.db.models.sql.datastructures import Join

from platformcore.lib.project_scope import current_scope

__all__ = [
    "SQLAggregateCompiler",
    "SQLCompiler",
    "SQLDeleteCompiler",
    "SQLInsertCompiler",
    "SQLUpdateCompiler",
]


@functools.cache
def _project_column(model: type[models.Model]) -> models.Field | None:
    """The model's `project_id` column, if it has one beside its primary key."""
    for field in model._meta.concrete_fields:
        if field.column == "project_id" and not field.primary_key:
            return field
    return None


@functools.cache
def _tenant_tables() -> frozenset[str]:
    """The tables of models with a `project_id` column beside their primary key."""
    return frozenset(
        model._meta.db_table for model in apps.get_models() if _project_column(model) is not None
    )


def _scoped_project() -> int | None:
    """The project of the calling code's row-level security scope, if it is one project."""
    scope = current_scope()
    return scope if isinstance(scope, int) and not isinstance(scope, bool) else None


class SQLCompiler(compiler.SQLCompiler):
    _executing = False  # compiled to run now, not kept as text (sql_with_params, subqueries)

    def execute_sql(self, *args: Any, **kwargs: Any) -> Any:
        self._executing = True
        return super().execute_sql(*args, **kwargs)

    def as_sql(self, *args: Any, **kwargs: Any) -> Any:
        self._route_to_project()
        return super().as_sql(*args, **kwargs)

    def _route_to_project(self) -> None:
        """On Citus, a statement on a tenant table run in one project's scope names that
        project (`AND project_id = <the scope's>`), so Citus sends it to the project's shard
        alone: a look-up by id would otherwise go to every shard, and a locking one (FOR
        UPDATE) would be refused. Row-level security already limits the statement to those
        rows, so the rows are the same. Only a statement compiled to run now: the text of one
        compiled for later (a search's statement, kept per process) must not carry a
        project."""
        model = self.query.model
        if not self._executing or model is None or not getattr(self.connection, "is_citus", False):
            return
        project, column = _scoped_project(), _project_column(model)
        if project is None or column is None or getattr(self, "_routed", False):
            return
        self.query = self.query.clone()
        self.query.add_q(models.Q(**{column.attname: project}))
        self._routed = True

    def compile(self, node: Any) -> Any:
        sql, params = super().compile(node)
        if type(node) is Join and self._same_project_join(node):
            qn = self.quote_name_unless_alias
            match = f"{qn(node.parent_alias)}.project_id = {qn(node.table_alias)}.project_id"
            sql = f"{sql[:-1]} AND {match})"  # inside the ON (...) clause
        return sql, params

    def _same_project_join(self, join: Join) -> bool:
        if not getattr(self.connection, "is_citus", False):
            return False
        parent = self.query.alias_map.get(join.parent_alias)
        tenant = _tenant_tables()
        return parent is not None and join.table_name in tenant and parent.table_name in tenant

    def collapse_group_by(self, expressions: list[Any], having: Any) -> list[Any]:
        expressions = list(super().collapse_group_by(expressions, having))
        grouped = {(getattr(e, "alias", None), getattr(e, "target", None)) for e in expressions}
        for expr in list(expressions):
            target: Any = getattr(expr, "target", None)
            alias: Any = getattr(expr, "alias", None)
            if alias is None or not getattr(target, "primary_key", False):
                continue
            project = _project_column(target.model)
            if project is not None and (alias, project) not in grouped:
                expressions.append(project.get_col(alias))
                grouped.add((alias, project))
        return expressions


def _filters_by_pk(query: Any) -> bool:
    return any(
        getattr(getattr(child, "lhs", None), "target", None) is query.model._meta.pk
        for child in query.where.children
    )


class SQLInsertCompiler(compiler.SQLInsertCompiler, SQLCompiler):
    def assemble_as_sql(self, fields: Any, value_rows: Any) -> Any:
        """On Citus, a bulk insert is a multi-row VALUES list, not Django's `INSERT ...
        SELECT FROM UNNEST(...)`: Citus runs an INSERT ... SELECT from a source that is not a
        distributed table through the coordinator with COPY, which row-level security
        refuses; VALUES rows are sent to their shards as they are."""
        if getattr(self.connection, "is_citus", False):
            return base_compiler.SQLInsertCompiler.assemble_as_sql(self, fields, value_rows)
        return super().assemble_as_sql(fields, value_rows)


class SQLDeleteCompiler(compiler.SQLDeleteCompiler, SQLCompiler):
    def as_sql(self, *args: Any, **kwargs: Any) -> Any:
        self._route_to_project()
        return super().as_sql(*args, **kwargs)


class SQLUpdateCompiler(compiler.SQLUpdateCompiler, SQLCompiler):
    def as_sql(self) -> Any:
        """On Citus, a model's `save()` (an update by primary key that sets every column,
        `project_id` included) outside a project's scope also filters by the project it
        sets: Citus refuses to assign the distribution column unless the statement is
        limited to rows that already have that value, and the filter routes it to the
        project's shard. In a project's scope `_route_to_project` adds the scope's."""
        self._route_to_project()
        if getattr(self.connection, "is_citus", False) and _scoped_project() is None:
            project = _project_column(self.query.model) if self.query.model else None
            assigned = [value for field, _model, value in self.query.values if field == project]
            if assigned and _filters_by_pk(self.query):
                self.query.add_q(models.Q(**{project.attname: assigned[0]}))  # type: ignore[union-attr]
        return super().as_sql()


class SQLAggregateCompiler(compiler.SQLAggregateCompiler, SQLCompiler):
    pass
