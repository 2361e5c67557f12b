"""`manage.py reembed --model`: a live store moved to another model of another dimension
while it is written and searched, every table switched at once, nothing lost."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from documents.models import DocumentChunk
from entities.models import Entity
from maintenance import embedding_switch
from memories.embeddings import EmbedderSpec, make_embedder
from memories.models import EmbeddingSpace, Memory
from memories.services.summaries import memories_summarize
from memories.vector_storage import column_storage
from tests.conftest import make_tenant
from tests.documents.conftest import RUNBOOK
from tests.tiny_models import tiny_embedder

URL = "/api/v1/memories/"
# long enough for a summary at MEMORY_SUMMARY_MIN_TOKENS = 20 (the `summarized` fixture)
RELEASES = (
    "The release train leaves every second Tuesday at noon. "
    "Feature flags guard every change that is not finished by then. "
    "The release captain checks the error dashboards before promoting a build. "
    "A failed canary stops the train until the captain signs off. "
    "Hotfixes skip the train but need two reviewers and a rollback plan."
)


def tiny(dimensions: int = 32):  # type: ignore[no-untyped-def]
    return make_embedder(EmbedderSpec("local", tiny_embedder(dimensions)))


@pytest.fixture
def summarized(settings) -> None:
    """Memories of 20 tokens and more get a summary (and its vector)."""
    settings.MEMORY_SUMMARY_MIN_TOKENS = 20


def assert_every_vector_from(embedder, memories) -> None:  # type: ignore[no-untyped-def]
    """The memories' content vectors, and their summaries', are `embedder`'s."""
    rows = list(Memory.objects.filter(pk__in=[m.pk for m in memories]))
    assert len(rows) == len(memories)
    summarized = [row for row in rows if row.summary]
    texts = [row.content for row in rows] + [row.summary for row in summarized]
    stored = [row.embedding for row in rows] + [row.summary_embedding for row in summarized]
    for text, vector, expected in zip(texts, stored, embedder.embed_batch(texts), strict=True):
        assert vector is not None, text
        assert np.allclose(vector, expected, atol=1e-5), text


def shadow_vectors(column: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM memories_memory WHERE {column} IS NOT NULL")
        return cursor.fetchone()[0]


def test_every_table_moves_to_the_new_model_and_searches_follow(switchable, summarized, capsys):
    alice = make_tenant("alice")
    for text in ("Deploys run from the release branch", "The VPN needs a hardware key"):
        alice.post(URL, {"content": text, "user_id": "u1"})
    releases = alice.post(URL, {"content": RELEASES, "user_id": "u1"}).json()
    alice.post("/api/v1/documents/", {"text": RUNBOOK, "user_id": "u1"})
    Entity.objects.create(project=alice.project, name="Ops wiki", normalized_name="ops wiki")
    summary = Memory.objects.get(pk=releases["id"]).summary
    assert summary

    call_command("reembed", "--model", tiny_embedder(32), verbosity=0)

    assert "switched from local:all-MiniLM-L6-v2 (384" in capsys.readouterr().out
    for table, column in (
        ("memories_memory", "embedding"),
        ("memories_memory", "summary_embedding"),
        ("entities_entity", "embedding"),
        ("documents_documentchunk", "embedding"),
    ):
        assert str(column_storage(table, column)) == "vector(32)"
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname LIKE '%%_next'")
        assert cursor.fetchone()[0] == 0
    assert_every_vector_from(tiny(), list(Memory.objects.all()))
    assert not Entity.objects.filter(embedding__isnull=True).exists()
    assert not DocumentChunk.objects.filter(embedding__isnull=True).exists()
    space = EmbeddingSpace.objects.get(key="default")
    assert (space.dimensions, space.generation) == (32, 1)
    assert not EmbeddingSpace.objects.filter(key="next").exists()
    body = alice.post(
        f"{URL}search/", {"query": "The VPN needs a hardware key", "mode": "semantic"}
    ).json()
    assert body["results"][0]["content"] == "The VPN needs a hardware key"
    assert body["results"][0]["score_parts"]["semantic"] == pytest.approx(1.0, abs=1e-5)
    # the summary's own vector, of the new model, finds the long memory: the best match
    top = alice.post(f"{URL}search/", {"query": summary, "mode": "semantic"}).json()["results"][0]
    assert top["id"] == releases["id"]
    assert top["score_parts"]["semantic"] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_a_switch_under_concurrent_writes_and_searches_loses_nothing(
    switchable, summarized, settings
):
    settings.MEMORY_DEDUP_THRESHOLD = 1.0  # the tiny model finds these texts near-identical
    alice = make_tenant("alice")
    for i in range(120):
        alice.post(URL, {"content": f"Standing note {i} about service {i % 7}", "user_id": "u1"})
    stop, errors, written = threading.Event(), [], []
    writer, reader = make_tenant("alice"), make_tenant("alice")

    def write() -> None:
        i = 0
        while not stop.is_set():
            content = f"Written during the switch {i}"
            if i % 10 == 0:  # a long one: its summary job writes a summary vector too
                content = f"{RELEASES} {content}."
            response = writer.post(URL, {"content": content, "user_id": "u1"})
            (written if response.status_code == 201 else errors).append(response)
            i += 1
        connection.close()

    def search() -> None:
        while not stop.is_set():
            response = reader.post(f"{URL}search/", {"query": "service 3", "user_id": "u1"})
            if response.status_code != 200 or not response.json()["results"]:
                errors.append(response)
        connection.close()

    threads = [threading.Thread(target=work) for work in (write, search)]
    for thread in threads:
        thread.start()
    try:
        call_command("reembed", "--model", tiny_embedder(32), verbosity=0)
        stop.wait(0.3)  # a little more after the switch
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not errors, [(r.status_code, r.content[:200]) for r in errors[:3]]
    assert written  # and memories were stored while it ran
    assert Memory.objects.exclude(summary="").exists()
    assert Memory.objects.count() == 120 + len(written)  # merged ones stay, soft-deleted
    assert_every_vector_from(tiny(), list(Memory.objects.filter(deleted_at__isnull=True)))


def test_a_model_that_cannot_be_loaded_changes_nothing(db, capsys):
    with pytest.raises(CommandError, match="/nowhere/no-such-model"):
        call_command("reembed", "--model", "/nowhere/no-such-model", verbosity=0)
    assert column_storage("memories_memory", "embedding_next") is None
    assert not EmbeddingSpace.objects.filter(key="next").exists()


def test_a_killed_switch_resumes_and_another_model_waits_for_it(
    switchable, summarized, settings, monkeypatch
):
    alice = make_tenant("alice")
    for i in range(10):
        alice.post(URL, {"content": f"Note number {i}", "user_id": "u1"})
    long = alice.post(URL, {"content": RELEASES, "user_id": "u1"}).json()
    summary = Memory.objects.get(pk=long["id"]).summary
    monkeypatch.setattr(embedding_switch, "BATCH", 4)

    def killed(name: str, done: int, total: int | None = None) -> None:
        if name == "memory_summaries":
            raise KeyboardInterrupt  # after the content vectors and the first summaries'

    with pytest.raises(KeyboardInterrupt):
        embedding_switch.embeddings_switch(
            spec=EmbedderSpec("local", tiny_embedder(32)), progress=killed
        )
    assert EmbeddingSpace.objects.get(key="next").stage == "filling"
    assert (shadow_vectors("embedding_next"), shadow_vectors("summary_embedding_next")) == (11, 1)
    # searches still answer from the old vectors meanwhile
    hits = alice.post(f"{URL}search/", {"query": "Note number 3", "mode": "semantic"}).json()
    assert hits["results"][0]["content"] == "Note number 3"
    # a summary written again meanwhile (the content unchanged) is embedded again
    settings.MEMORY_SUMMARY_SENTENCES = 1
    assert memories_summarize(project=alice.project, memory_ids=[long["id"]]) == 1
    assert Memory.objects.get(pk=long["id"]).summary not in ("", summary)
    assert (shadow_vectors("embedding_next"), shadow_vectors("summary_embedding_next")) == (11, 0)

    with pytest.raises(CommandError, match=r"a switch to .*embedder-32.* is under way"):
        call_command("reembed", "--model", tiny_embedder(48), verbosity=0)
    call_command("reembed", verbosity=0)  # the unfinished switch, to its end
    assert EmbeddingSpace.objects.get(key="default").dimensions == 32
    assert_every_vector_from(tiny(), list(Memory.objects.all()))


def test_a_memory_written_while_the_indexes_build_switches_with_its_summary(switchable, summarized):
    """A memory stored after the fill and before the swap is embedded in the swap's own
    transaction, its content and its summary both: two updates of one row, whose deferred
    key checks run before the columns are swapped."""
    alice = make_tenant("alice")
    alice.post(URL, {"content": "Note written before the switch", "user_id": "u1"})
    late: list[dict] = []

    def store_late(name: str, done: int, total: int | None = None) -> None:
        if name == "indexes" and not late:
            late.append(alice.post(URL, {"content": RELEASES, "user_id": "u1"}).json())

    report = embedding_switch.embeddings_switch(
        spec=EmbedderSpec("local", tiny_embedder(32)), progress=store_late
    )
    assert report.switched and report.stragglers >= 2  # the late memory's two vectors
    stored = Memory.objects.get(pk=late[0]["id"])
    assert stored.summary
    assert_every_vector_from(tiny(), list(Memory.objects.all()))


def test_a_memory_deleted_before_a_switch_comes_back_searchable(switchable, summarized):
    """A switch embeds the live memories; one restored afterwards is embedded by the restore
    (its content and its summary) with the new model, and semantic search finds it."""
    alice = make_tenant("alice")
    kept = alice.post(URL, {"content": "Deploys run from the release branch", "user_id": "u1"})
    gone = alice.post(URL, {"content": RELEASES, "user_id": "u1"}).json()
    assert Memory.objects.get(pk=gone["id"]).summary
    assert kept.status_code == 201
    assert alice.delete(f"{URL}{gone['id']}/").status_code in (200, 204)

    call_command("reembed", "--model", tiny_embedder(32), verbosity=0)

    assert Memory.objects.get(pk=gone["id"]).embedding is None  # deleted: not switched
    restored = alice.post(f"{URL}{gone['id']}/restore/")
    assert restored.status_code == 200, restored.json()
    assert restored.json()["has_embedding"] is True
    assert_every_vector_from(tiny(), [Memory.objects.get(pk=gone["id"])])
    body = alice.post(f"{URL}search/", {"query": RELEASES, "mode": "semantic"}).json()
    assert body["results"][0]["id"] == gone["id"]
