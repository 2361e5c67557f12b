"""The HNSW graph's health: its recall against exact search is measured on a sample of
memories and the graph is rebuilt, concurrently and with its own parameters and predicate,
when the recall falls below the minimum."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from memories.models import Memory
from memories.services.memories import content_hash
from memories.services.vector_index import (
    vector_index_maintain,
    vector_index_parameters,
    vector_index_rebuild,
)
from memories.tasks import vector_index_health
from memoryplatform.lib.errors import InvalidInput
from tenants.services import project_create

pytestmark = pytest.mark.django_db(transaction=True)  # CREATE INDEX CONCURRENTLY


def definition() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embedding_hnsw'")
        return cursor.fetchone()[0]


@pytest.fixture
def model_parameters_restored():
    yield
    vector_index_rebuild(m=16, ef_construction=128)
    with connection.cursor() as cursor:
        cursor.execute("RESET hnsw.ef_search")


def random_memories(count: int) -> None:
    """`count` memories with random unit vectors, the hardest case for a graph."""
    project = project_create(slug="health")
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(count, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    Memory.objects.bulk_create(
        Memory(
            project=project,
            content=f"memory {i}",
            content_hash=content_hash(f"memory {i}"),
            embedding=vector.tolist(),
            user_id="u1",
        )
        for i, vector in enumerate(vectors)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")


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


def test_a_healthy_graph_is_measured_and_left_alone():
    random_memories(300)
    report = vector_index_maintain(sample=20)
    assert report.sampled == 20 and report.recall == 1.0  # ef_search 400 on 300 vectors
    assert not report.rebuilt and report.recall_after is None


def test_a_worn_graph_is_rebuilt_with_its_own_parameters(model_parameters_restored):
    random_memories(2000)
    vector_index_rebuild(m=2, ef_construction=4)  # a graph that misses most neighbours
    with connection.cursor() as cursor:  # this session's searches: narrow
        cursor.execute("SET hnsw.ef_search = 10")
    checked = vector_index_maintain(sample=30, rebuild=False)
    assert checked.recall < 0.95 and not checked.rebuilt
    assert not vector_index_maintain(sample=30, min_recall=0.0).rebuilt  # 0: never
    report = vector_index_maintain(sample=30, min_recall=0.95)
    assert report.rebuilt and report.recall < 0.95 and report.recall_after is not None
    assert vector_index_parameters() == (2, 4)
    assert "NOT vector_pending" in definition()


def test_an_empty_graph_has_nothing_to_measure():
    report = vector_index_maintain()
    assert report.recall is None and report.sampled == 0 and not report.rebuilt
    assert vector_index_health()["recall"] is None  # the hourly job


def test_the_health_command_reports_and_refuses_bad_input():
    random_memories(200)
    out = StringIO()
    call_command("vector_index_health", "--sample", "10", "--no-progress", stdout=out)
    assert "recall@10 1.000 on 10 memories (rebuild below 0.95)" in out.getvalue()
    with pytest.raises(CommandError, match="min_recall"):
        call_command("vector_index_health", "--min-recall", "2", "--no-progress")
    with pytest.raises(CommandError, match="m must be"):
        call_command("rebuild_vector_index", "--m", "1")
