"""A read beside the caller's: another thread and connection outside a transaction, inline
inside one (another connection could not see the caller's uncommitted rows)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from platformcore.lib.db_threads import beside
from tenants.models import Project
from tenants.services import project_create


def _seen() -> tuple[str, list[str], int]:
    slugs = sorted(Project.objects.values_list("slug", flat=True))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    return threading.current_thread().name, slugs, pid


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_work_runs_on_its_own_connection() -> None:
    project_create(slug="committed")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        mine = cursor.fetchone()[0]
    thread, slugs, pid = beside(_seen).result()
    assert thread.startswith("db-beside") and pid != mine
    assert slugs == ["committed"]


@pytest.mark.django_db
def test_inside_a_transaction_the_work_runs_inline_and_sees_uncommitted_rows() -> None:
    with transaction.atomic():
        project_create(slug="uncommitted")
        thread, slugs, _ = beside(_seen).result()
    assert thread == threading.current_thread().name
    assert slugs == ["uncommitted"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("in_transaction", [False, True])
def test_an_error_in_the_work_is_raised_by_result(in_transaction) -> None:
    def fails() -> None:
        raise ValueError("boom")

    with transaction.atomic() if in_transaction else _nothing():
        future = beside(fails)
        with pytest.raises(ValueError, match="boom"):
            future.result()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
