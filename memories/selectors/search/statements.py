"""Running a search statement under planner settings of its own, in one round trip."""

from __future__ import annotations

import re
from typing import Any

import psycopg
from django.db import connections, transaction

_SETTING = re.compile(r"^[a-z_][a-z0-9_.]*$")
_VALUE = re.compile(r"^[a-z0-9_.]+$")


def fetch_with_settings(
    using: str,
    sql: str,
    params: list[Any] | dict[str, Any],
    settings: dict[str, str] | None = None,
) -> list[tuple]:
    """The rows of `sql`, run with the planner `settings` ({"enable_seqscan": "off"}) for this
    statement only.

    In autocommit (a request), the settings and the statement travel as one query string:
    PostgreSQL runs a multi-statement query as one implicit transaction, so `SET LOCAL`
    lasts for this statement only, in one round trip where a transaction around them took
    four (BEGIN, the settings, the statement, COMMIT), which counts the more where the
    database is across a network. Inside a transaction the settings hold for this statement,
    the previous values restored for the rest of the enclosing one."""
    settings = settings or {}
    for name, value in settings.items():
        if not _SETTING.match(name) or not _VALUE.match(value):
            raise ValueError(f"not a plain planner setting: {name} = {value}")
    db = connections[using]
    with db.cursor() as cursor:
        if not settings:
            cursor.execute(sql, params)
            return cursor.fetchall()
        citus = getattr(db, "is_citus", False)  # forwards a SET with its whole query string
        if not db.in_atomic_block and isinstance(cursor.cursor, psycopg.ClientCursor) and not citus:
            prefix = "".join(f"SET LOCAL {name} = {value}; " for name, value in settings.items())
            cursor.execute(prefix + sql, params)
            for _ in settings:
                cursor.nextset()
            return cursor.fetchall()
    names = list(settings)
    if getattr(db, "is_citus", False):
        return _fetch_with_set_local(using, sql, params, settings)
    with transaction.atomic(using=using), db.cursor() as cursor:
        # missing_ok: an extension's setting (pg_trgm's) is unknown until its library loads
        cursor.execute(
            "SELECT "
            + ", ".join("current_setting(%s, true), set_config(%s, %s, true)" for _ in names),
            [part for name in names for part in (name, name, settings[name])],
        )
        previous = cursor.fetchone()[::2]
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        # SET LOCAL outlives a savepoint: give the enclosing transaction its values back (an
        # extension's setting unknown before: its default, now that the statement loaded it)
        cursor.execute(
            "SELECT "
            + ", ".join(
                "set_config(%s, coalesce(%s, (SELECT reset_val FROM pg_settings"
                " WHERE name = %s)), true)"
                for _ in names
            ),
            [
                part
                for name, value in zip(names, previous, strict=True)
                for part in (name, value, name)
            ],
        )
        return rows


def _fetch_with_set_local(
    using: str, sql: str, params: list[Any] | dict[str, Any], settings: dict[str, str]
) -> list[tuple]:
    """fetch_with_settings on a Citus coordinator: each setting a `SET LOCAL` of its own,
    which Citus forwards to the workers where the statement's scans run (it forwards the
    query string a SET came in, so a SET sharing one with the statement would run the
    statement there too), the enclosing transaction's values put back after."""
    names = list(settings)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(f"SELECT {', '.join('current_setting(%s, true)' for _ in names)}", names)
        previous = cursor.fetchone()
        for name in names:
            cursor.execute(f"SET LOCAL {name} = {settings[name]}")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        for name, value in zip(names, previous, strict=True):
            if value is None:  # an extension's setting unknown before: its default
                cursor.execute("SELECT reset_val FROM pg_settings WHERE name = %s", [name])
                row = cursor.fetchone()
                if row is None:
                    continue
                value = row[0]
            quoted = value.replace("'", "''")
            cursor.execute(f"SET LOCAL {name} = '{quoted}'")
        return rows
