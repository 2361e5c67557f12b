"""Django's PostgreSQL compilers, grouping by a tenant table's whole primary key.

A query that aggregates over a model's rows (`annotate(Count(...))`) is grouped by the
model's primary key alone: Django relies on PostgreSQL letting a table's other columns be
selected when its primary key is grouped by (`allows_group_by_selected_pks`). A tenant
table's key in the database is `(id, project_id)` (memoryplatform/migrations/
0002_composite_tenant_keys.py, Citus-ready) while its model's primary key is `id`, so
`GROUP BY id` no longer covers the key and PostgreSQL refuses the other columns. Here the
table's `project_id` is grouped by beside its id: the whole key, and the same groups (an id
is one row).
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import models
from django.db.backends.postgresql import compiler
from django.db.backends.postgresql.compiler import SQLInsertCompiler

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


class SQLCompiler(compiler.SQLCompiler):
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


class SQLDeleteCompiler(compiler.SQLDeleteCompiler, SQLCompiler):
    pass


class SQLUpdateCompiler(compiler.SQLUpdateCompiler, SQLCompiler):
    pass


class SQLAggregateCompiler(compiler.SQLAggregateCompiler, SQLCompiler):
    pass
