"""Search statements run under settings of their own (planner settings, pg_trgm's threshold)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from memories.selectors.search.statements import fetch_with_settings


@pytest.mark.django_db
def test_a_setting_unknown_to_the_connection_holds_for_the_statement_only():
    """An extension's setting is unknown to a connection until the extension's library loads
    there (pg_trgm's threshold, on a connection that has not matched a misspelt name yet):
    inside a transaction the statement still runs under it, and the transaction goes on
    without it."""
    name = "memory_test.threshold"
    with transaction.atomic():
        sql = "SELECT current_setting(%s)"
        assert fetch_with_settings(connection.alias, sql, [name], {name: "0.5"}) == [("0.5",)]
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting(%s, true)", [name])
            assert cursor.fetchone()[0] in (None, "")


@pytest.mark.django_db
def test_a_planner_setting_holds_for_the_statement_only():
    with transaction.atomic():
        sql = "SELECT current_setting('enable_seqscan')"
        assert fetch_with_settings(connection.alias, sql, [], {"enable_seqscan": "off"}) == [
            ("off",)
        ]
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('enable_seqscan')")
            assert cursor.fetchone()[0] == "on"
