"""The HNSW graph's health: merges, deletes and re-embeddings wear the graph, so the row
versions the table loses are counted from the graph's build, and the graph is rebuilt,
concurrently and with its own parameters and predicate, once they reach a share of it."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from pgvector.django import CosineDistance

from memories.models import Memory
from memories.services.vector_index import (
    USER_VECTORS,
    vector_index_maintain,
    vector_index_parameters,
    vector_index_rebuild,
)
from memories.tasks import vector_index_health
from platformcore.lib.errors import InvalidInput
from tenants.services import project_create
from tests.memories.random_vectors import random_vector_memories

pytestmark = pytest.mark.django_db(transaction=True)  # CREATE INDEX CONCURRENTLY


def definition() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embedding_hnsw'")
        return cursor.fetchone()[0]


@pytest.fixture
def model_parameters_restored():
    yield
    vector_index_rebuild(m=16, ef_construction=128)


def memories(count: int) -> list[Memory]:
    return random_vector_memories(project_create(slug="health"), count)


def soft_delete(rows: list[Memory]) -> None:
    now = datetime.now(UTC)
    Memory.objects.filter(pk__in=[row.pk for row in rows]).update(deleted_at=now)


def test_a_rebuild_keeps_the_graph_predicate_and_its_own_parameters(model_parameters_restored):
    vector_index_rebuild(m=24, ef_construction=100)
    assert "m='24'" in definition() and "ef_construction='100'" in definition()
    # live memories whose vector is not pending only, as the model declares it
    assert "WHERE ((deleted_at IS NULL) AND (NOT vector_pending))" in definition()
    report = vector_index_rebuild()  # no parameters: the graph's own
    assert (report.m, report.ef_construction) == (24, 100) == vector_index_parameters()
    with pytest.raises(InvalidInput):
        vector_index_rebuild(m=1)
    with pytest.raises(InvalidInput):
        vector_index_rebuild(m=16, ef_construction=20)  # below 2*m


def test_a_rebuild_has_its_build_memory_and_gives_the_session_its_own_back(settings):
    memories(50)
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '64MB'")
        settings.MEMORY_HNSW_BUILD_MEMORY_MB = 300
        assert vector_index_rebuild().rebuilt
        cursor.execute("SHOW maintenance_work_mem")
        assert cursor.fetchone()[0] == "64MB"
        settings.MEMORY_HNSW_BUILD_MEMORY_MB = 32  # less than the session has: left alone
        assert vector_index_rebuild().rebuilt
        cursor.execute("SHOW maintenance_work_mem")
        assert cursor.fetchone()[0] == "64MB"
        cursor.execute("RESET maintenance_work_mem")
    search = Memory.objects.order_by(CosineDistance("embedding", [1.0] + [0.0] * 383))[:5]
    assert len(list(search)) == 5


# Other connections (earlier tests' servers and workers) may flush statistics of their own
# changes at any time: they can only add to the count, so the assertions leave room above.
def test_wear_is_counted_from_the_build_and_a_worn_graph_is_rebuilt(model_parameters_restored):
    rows = memories(400)
    vector_index_rebuild()  # the count starts here
    soft_delete(rows[:40])  # 40 of 400: 0.11 of the 360 left
    report = vector_index_maintain(max_churn=0.9)
    assert report.changes >= 40 and report.graph_rows == 360 and not report.rebuilt
    soft_delete(rows[40:120])  # 120 gone: 0.43 of the 280 left
    assert not vector_index_maintain(max_churn=0).rebuilt  # 0: never
    assert not vector_index_maintain(max_churn=0.3, rebuild=False).rebuilt
    report = vector_index_maintain(max_churn=0.3)
    assert report.changes >= 120 and report.churn >= 120 / 280 - 1e-3 and report.rebuilt
    assert vector_index_maintain(rebuild=False).changes < 120  # counted from the new build
    assert "NOT vector_pending" in definition()


def index_pages(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size(%s::regclass) / 8192", [name])
        return cursor.fetchone()[0]


def test_a_rebuild_also_compacts_the_covering_index_of_users_vectors(model_parameters_restored):
    """Re-embedding leaves a dead 1.6 KB entry per memory in the (project, user_id) covering
    index; left there, PostgreSQL stops using it for a user's ranking. A rebuild of the graph
    reindexes it too, and a user's semantic search still finds the same memories."""
    rows = memories(300)
    vector_index_rebuild()
    fresh = index_pages(USER_VECTORS)
    shifted = np.roll(np.array([row.embedding for row in rows]), 1, axis=1)
    for _ in range(3):  # three re-embeddings of every memory: non-HOT updates
        for row, vector in zip(rows, shifted, strict=True):
            Memory.objects.filter(pk=row.pk).update(embedding=vector.tolist())
    worn = index_pages(USER_VECTORS)
    assert worn > 2 * fresh
    probe = shifted[7].tolist()
    nearest = Memory.objects.filter(user_id="u1").order_by(CosineDistance("embedding", probe))
    before = [row.pk for row in nearest[:5]]

    report = vector_index_rebuild()
    assert report.rebuilt and report.user_vectors_seconds > 0
    assert index_pages(USER_VECTORS) <= fresh + 1
    assert [row.pk for row in nearest[:5]] == before and before[0] == rows[7].pk


def test_reinforcement_is_a_hot_update_that_adds_nothing_to_the_graph(alice):
    from django.db import transaction

    from memories.services.reinforcement import memories_reinforce

    for text in ("Canine behavior training tips", "Lunch is at noon on Fridays"):
        alice.post("/api/v1/memories/", {"content": text, "user_id": "u1"})
    ids = list(Memory.objects.filter(project=alice.project).values_list("pk", flat=True))
    stats = (
        "SELECT pg_stat_get_xact_tuples_updated(%s::regclass), "
        "pg_stat_get_xact_tuples_hot_updated(%s::regclass)"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(stats, ["memories_memory", "memories_memory"])
        before = cursor.fetchone()  # the test's own transaction: the stores' writes count too
        assert memories_reinforce(project=alice.project, memory_ids=ids) == 2
        cursor.execute(stats, ["memories_memory", "memories_memory"])
        after = cursor.fetchone()
        assert (after[0] - before[0], after[1] - before[1]) == (2, 2)  # no index entry


def test_the_hourly_job_and_the_command_report_and_refuse_bad_input(model_parameters_restored):
    rows = memories(100)
    vector_index_rebuild()
    soft_delete(rows[:50])
    assert vector_index_health()["rebuilt"]  # the hourly job: 50 lost, 50 left
    soft_delete(rows[50:60])
    out = StringIO()
    call_command("vector_index_health", "--check-only", "--max-churn", "0.2", stdout=out)
    assert "row versions lost since the build, 40 memories in the index" in out.getvalue()
    assert "not rebuilt (--check-only" in out.getvalue()
    with pytest.raises(CommandError, match="max_churn"):
        call_command("vector_index_health", "--max-churn", "-1")
    with pytest.raises(CommandError, match="m must be"):
        call_command("rebuild_vector_index", "--m", "1")
