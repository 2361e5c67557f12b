"""A store the API acknowledges is stored: a failure inside the write's transaction that the
write itself cannot recover from fails the request, never an answer with the id of a memory
that was rolled back.

The graph update of a new memory runs inside the write's transaction and may fail on its own
(it costs the memory its graph, not the memory). Two failures must not be swallowed there:

- the connection dies (the server killed or restarted) between the graph update's SAVEPOINT
  and its RELEASE: Django then marks the transaction for rollback, and the outermost atomic
  block rolls it back *without raising*, so the view answered 201 with the new id. This is
  what the fault benchmark saw when PostgreSQL was killed (one acknowledged store missing);
- a statement of the extraction fails on the server: the transaction is aborted, and its
  COMMIT is a silent ROLLBACK (PostgreSQL answers COMMIT with ROLLBACK; psycopg does not
  raise).

The database is real; the server process is ended from another connection
(`pg_terminate_backend`), as a PostgreSQL restart ends it.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction

from entities.services import memory_graph
from memories.models import Memory
from platformcore.lib.project_scope import all_projects

pytestmark = pytest.mark.django_db(transaction=True)  # the write's own transaction commits


@pytest.fixture(autouse=True)
def _inline_graph(settings: Any) -> None:
    settings.MEMORY_GRAPH_EXTRACTION = "sync"  # the graph update runs inside the write


def _terminate_own_backend() -> None:
    """End this connection's server process from another connection, as a restart would."""
    pid = connection.connection.info.backend_pid
    params = connection.get_connection_params()
    keep = {"dbname", "user", "password", "host", "port"}
    with psycopg.connect(**{k: v for k, v in params.items() if k in keep}, autocommit=True) as c:
        assert c.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()[0]


def _stored(project: Any, content: str) -> bool:
    connection.close()  # the broken one, if the test left it so
    with all_projects("test: was it stored"):
        return Memory.objects.filter(project=project, content=content).exists()


def test_a_store_whose_connection_dies_in_the_graph_update_is_not_acknowledged(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply_plans = memory_graph._apply_plans

    def server_gone_first(project: Any, plans: Any) -> Any:
        _terminate_own_backend()  # inside the graph update's savepoint
        return apply_plans(project, plans)

    monkeypatch.setattr(memory_graph, "_apply_plans", server_gone_first)
    response = alice.post("/api/v1/memories/", {"content": "lost at the kill", "user_id": "u1"})
    monkeypatch.undo()

    stored = _stored(alice.project, "lost at the kill")
    assert response.status_code == 503, (response.status_code, stored)
    assert not stored
    # and with the server reachable again the same store goes through
    again = alice.post("/api/v1/memories/", {"content": "lost at the kill", "user_id": "u1"})
    assert again.status_code == 201
    assert _stored(alice.project, "lost at the kill")


def test_an_update_whose_connection_dies_in_the_graph_update_is_not_acknowledged(
    alice: Any, remember: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = remember("before the kill")
    apply_plans = memory_graph._apply_plans

    def server_gone_first(project: Any, plans: Any) -> Any:
        _terminate_own_backend()
        return apply_plans(project, plans)

    monkeypatch.setattr(memory_graph, "_apply_plans", server_gone_first)
    response = alice.patch(f"/api/v1/memories/{memory['id']}/", {"content": "after the kill"})
    monkeypatch.undo()

    assert response.status_code == 503, response.status_code
    assert _stored(alice.project, "before the kill")
    assert not _stored(alice.project, "after the kill")


def test_a_store_whose_extraction_fails_in_the_database_is_not_acknowledged(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_extract(content: str, self_name: str | None = None) -> Any:
        with connection.cursor() as cursor:  # a real error on the server: 22012
            cursor.execute("SELECT 1 / 0")

    monkeypatch.setattr(memory_graph, "extract", failing_extract)
    with pytest.raises(DatabaseError):
        alice.post("/api/v1/memories/", {"content": "aborted by extraction", "user_id": "u1"})
    monkeypatch.undo()
    assert not _stored(alice.project, "aborted by extraction")


def test_an_extractor_that_fails_outside_the_database_costs_only_the_graph(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_extract(content: str, self_name: str | None = None) -> Any:
        raise RuntimeError("the extractor broke")

    monkeypatch.setattr(memory_graph, "extract", failing_extract)
    response = alice.post("/api/v1/memories/", {"content": "kept anyway", "user_id": "u1"})
    assert response.status_code == 201
    assert _stored(alice.project, "kept anyway")


def test_a_commit_of_an_aborted_transaction_raises() -> None:
    """The backend's safety net: COMMIT of a transaction a swallowed error aborted raises
    instead of rolling back in silence."""
    with pytest.raises(DatabaseError), transaction.atomic():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 / 0")
        except DatabaseError:
            pass  # swallowed, as careless code does
