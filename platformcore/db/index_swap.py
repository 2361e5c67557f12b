"""Migrations that change an index in place on a live store."""

from __future__ import annotations

from django.db import migrations


def swap_index(name: str, build: str, old_build: str) -> list[migrations.RunSQL]:
    """Operations that build `name`_new beside the old index (`build`, a CREATE INDEX
    CONCURRENTLY with `{name}` in it), drop the old one and give the new one its name; and, in
    reverse, build the old one again (`old_build`). Reads and writes go on meanwhile, and at no
    moment is the table without one of the two: the migration must be `atomic = False`."""
    return [
        migrations.RunSQL(
            build.format(name=f"{name}_new"),
            reverse_sql=f"DROP INDEX CONCURRENTLY IF EXISTS {name}_new",
        ),
        migrations.RunSQL(
            f"DROP INDEX CONCURRENTLY IF EXISTS {name}",
            reverse_sql=old_build.format(name=name),
        ),
        migrations.RunSQL(
            f"ALTER INDEX {name}_new RENAME TO {name}",
            reverse_sql=f"ALTER INDEX {name} RENAME TO {name}_new",
        ),
    ]
