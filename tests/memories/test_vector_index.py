"""Deferred vector indexing: a bulk write with `vector_index: deferred` leaves its HNSW inserts
to a job. Its memories are found by every search and near-duplicate check meanwhile (compared
exactly), and after the job, through the index."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from memories.models import Memory
from memories.selectors.search import search_queryset
from memories.selectors.search.semantic import _ranked_statement
from memories.selectors.search_types import SearchQuery
from memories.services.consolidation import memories_consolidate
from memories.services.vector_index import index_pending_vectors, pending_vectors
from platformcore.lib.actor import SYSTEM
from platformcore.lib.vectors import vector_literal
from tenants.services import project_create
from tests.memories.random_vectors import random_vector_memories

DOGS = "Canine behavior training tips for new owners"
HOOKS = "React hooks let you use state in function components"
HOOKS_AGAIN = "React hooks allow using state inside function components"
OTHERS = ["Lunch is at noon on Fridays", "The billing service runs on PostgreSQL"]


def deferred_bulk(tenant, contents, status=201, **options):
    body = {
        "memories": [{"content": text, "user_id": "u1"} for text in contents],
        "vector_index": "deferred",
        **options,
    }
    response = tenant.post("/api/v1/memories/bulk/", body)
    assert response.status_code == status, response.json()
    return response.json()["results"]


def semantic(tenant, query, **scope):
    body = {"query": query, "mode": "semantic", **scope}
    response = tenant.post("/api/v1/memories/search/", body)
    assert response.status_code == 200, response.json()
    return [hit["content"] for hit in response.json()["results"]]


def test_deferred_memories_are_found_before_the_job_indexes_them_and_after(
    alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        deferred_bulk(alice, [DOGS, *OTHERS])
    assert Memory.objects.filter(project=alice.project, vector_pending=True).count() == 3
    assert pending_vectors(project=alice.project) == 3
    assert semantic(alice, "how to train dogs")[0] == DOGS
    assert semantic(alice, "how to train dogs", user_id="u1")[0] == DOGS
    for callback in callbacks:  # the commit's jobs: indexing runs synchronously under tests
        callback()
    assert pending_vectors(project=alice.project) == 0
    assert not Memory.objects.filter(project=alice.project, vector_pending=True).exists()
    assert semantic(alice, "how to train dogs")[0] == DOGS
    assert semantic(alice, "how to train dogs", user_id="u1")[0] == DOGS


def test_inline_is_the_default_and_a_project_may_choose_deferred(alice):
    alice.post("/api/v1/memories/bulk/", {"memories": [{"content": DOGS, "user_id": "u1"}]})
    assert not Memory.objects.filter(vector_pending=True).exists()
    alice.project.settings = {"bulk_vector_index": "deferred"}
    alice.project.save()
    alice.post("/api/v1/memories/bulk/", {"memories": [{"content": HOOKS, "user_id": "u1"}]})
    assert Memory.objects.get(content=HOOKS).vector_pending is True


def test_an_unknown_vector_index_mode_is_refused_and_stores_nothing(alice):
    item = {"content": HOOKS, "user_id": "u1"}
    response = alice.post("/api/v1/memories/bulk/", {"memories": [item], "vector_index": "later"})
    assert response.status_code == 400
    assert "vector_index" in response.json()["error"]["fields"]
    alice.project.settings = {"bulk_vector_index": "sometimes"}  # a bad project setting
    alice.project.save()
    response = alice.post("/api/v1/memories/bulk/", {"memories": [item]})
    assert response.status_code == 400
    assert "vector_index" in response.json()["error"]["fields"]
    assert not Memory.objects.filter(project=alice.project).exists()


def test_a_single_write_merges_into_a_near_duplicate_whose_vector_is_pending(alice):
    (old,) = deferred_bulk(alice, [HOOKS])
    response = alice.post("/api/v1/memories/", {"content": HOOKS_AGAIN, "user_id": "u1"})
    assert response.status_code == 200, response.json()
    assert response.json()["id"] == old["id"] and response.json()["version"] == 2


def test_a_probed_bulk_write_merges_into_a_pending_near_duplicate(alice, monkeypatch):
    from memories.services import bulk as bulk_service

    monkeypatch.setattr(bulk_service, "bulk_exact_limit", lambda *args: 1)  # probe every scope
    old = deferred_bulk(alice, [HOOKS, *OTHERS])[0]
    response = alice.post(
        "/api/v1/memories/bulk/", {"memories": [{"content": HOOKS_AGAIN, "user_id": "u1"}]}
    )
    assert response.status_code == 200, response.json()
    assert response.json()["results"][0]["id"] == old["id"]


def test_consolidation_probes_find_pending_near_duplicates(alice, monkeypatch):
    from memories.services import consolidation_pairs

    monkeypatch.setattr(consolidation_pairs, "exact_is_cheaper", lambda *args: False)
    alice.project.settings = {"consolidation_interval": 0}
    alice.project.save()
    kept, absorbed, *_ = deferred_bulk(
        alice, [HOOKS, HOOKS_AGAIN, *OTHERS], near_duplicates="consolidation"
    )
    assert Memory.objects.filter(vector_pending=True).count() == 4
    report = memories_consolidate(project=alice.project, actor=SYSTEM)
    assert report.memories_merged == 1
    pair = [kept["id"], absorbed["id"]]
    assert Memory.objects.filter(pk__in=pair, deleted_at__isnull=False).count() == 1


def test_the_in_graph_part_of_a_search_can_use_the_hnsw_index(alice):
    """The index's predicate (`NOT vector_pending`) must be implied by the statement, or every
    search would compare every vector of the project."""
    deferred_bulk(alice, [DOGS, *OTHERS])
    index_pending_vectors()
    queryset = search_queryset(project=alice.project, query=SearchQuery(text="dogs"))
    sql, params = _ranked_statement(queryset, vector_literal([0.1] * 384), 10, False)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "memory_embedding_hnsw" in plan


def test_pending_memories_of_another_project_are_never_found(alice, charlie):
    deferred_bulk(charlie, [DOGS])
    deferred_bulk(alice, OTHERS)
    assert DOGS not in semantic(alice, "how to train dogs")
    index_pending_vectors(project=alice.project)
    assert pending_vectors(project=alice.project) == 0
    assert pending_vectors(project=charlie.project) == 1


def test_index_vectors_command_drains_the_backlog_and_says_so(alice, charlie):
    deferred_bulk(alice, [DOGS, *OTHERS])
    deferred_bulk(charlie, [HOOKS])
    out = StringIO()
    call_command("index_vectors", project="alice", no_progress=True, stdout=out)
    assert "3 vectors indexed" in out.getvalue() and "0 still pending" in out.getvalue()
    assert pending_vectors(project=charlie.project) == 1
    call_command("index_vectors", no_progress=True, stdout=out)
    assert pending_vectors() == 0
    with pytest.raises(CommandError, match="no project"):
        call_command("index_vectors", project="nobody", no_progress=True)


@pytest.mark.django_db
def test_import_memories_can_defer_the_vector_index(tmp_path):
    project_create(slug="acme")
    path = tmp_path / "memories.jsonl"
    path.write_text("\n".join(json.dumps({"content": c, "user_id": "u"}) for c in [DOGS, HOOKS]))
    out = StringIO()
    call_command(
        "import_memories",
        str(path),
        project="acme",
        vector_index="deferred",
        no_progress=True,
        stdout=out,
    )
    assert "2 memories imported into acme: 2 new" in out.getvalue()
    assert "2 vectors wait for the HNSW index" in out.getvalue()
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("import_memories", str(path), "--vector-index=later", project="acme")


@pytest.mark.django_db(transaction=True)  # the workers' own connections see the rows
def test_several_workers_share_the_backlog_and_index_each_vector_once():
    project = project_create(slug="workers")
    random_vector_memories(project, 900, seed=5, vector_pending=True)
    seen = []
    report = index_pending_vectors(project=project, batch=50, workers=3, progress=seen.append)
    assert report.indexed == 900 == sum(seen) and report.pending == 0
    assert not Memory.objects.filter(vector_pending=True).exists()
    with pytest.raises(CommandError, match="--workers"):
        call_command("index_vectors", workers=0, no_progress=True)
