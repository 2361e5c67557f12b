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
from memories.embeddings import EmbedderSpec, make_embedder
from memories.models import EmbeddingSpace, Memory
from memories.vector_storage import column_storage
from memoryplatform.maintenance import embedding_switch
from tests.conftest import make_tenant
from tests.documents.conftest import RUNBOOK
from tests.tiny_models import tiny_embedder

URL = "/api/v1/memories/"


def tiny(dimensions: int = 32):  # type: ignore[no-untyped-def]
    return make_embedder(EmbedderSpec("local", tiny_embedder(dimensions)))


def assert_every_vector_from(embedder, memories) -> None:  # type: ignore[no-untyped-def]
    rows = list(Memory.objects.filter(pk__in=[m.pk for m in memories]))
    assert len(rows) == len(memories)
    expected = embedder.embed_batch([row.content for row in rows])
    for row, vector in zip(rows, expected, strict=True):
        assert row.embedding is not None, row.content
        assert np.allclose(row.embedding, vector, atol=1e-5), row.content


def test_every_table_moves_to_the_new_model_and_searches_follow(switchable, capsys):
    alice = make_tenant("alice")
    for text in ("Deploys run from the release branch", "The VPN needs a hardware key"):
        alice.post(URL, {"content": text, "user_id": "u1"})
    alice.post("/api/v1/documents/", {"text": RUNBOOK, "user_id": "u1"})
    Entity.objects.create(project=alice.project, name="Ops wiki", normalized_name="ops wiki")

    call_command("reembed", "--model", tiny_embedder(32), verbosity=0)

    assert "switched from local:all-MiniLM-L6-v2 (384" in capsys.readouterr().out
    for table in ("memories_memory", "entities_entity", "documents_documentchunk"):
        assert str(column_storage(table)) == "vector(32)"
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


@pytest.mark.slow
def test_a_switch_under_concurrent_writes_and_searches_loses_nothing(switchable, settings):
    settings.MEMORY_DEDUP_THRESHOLD = 1.0  # the tiny model finds these texts near-identical
    alice = make_tenant("alice")
    for i in range(120):
        alice.post(URL, {"content": f"Standing note {i} about service {i % 7}", "user_id": "u1"})
    stop, errors, written = threading.Event(), [], []
    writer, reader = make_tenant("alice"), make_tenant("alice")

    def write() -> None:
        i = 0
        while not stop.is_set():
            response = writer.post(
                URL, {"content": f"Written during the switch {i}", "user_id": "u1"}
            )
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
    assert Memory.objects.count() == 120 + len(written)  # merged ones stay, soft-deleted
    assert_every_vector_from(tiny(), list(Memory.objects.filter(deleted_at__isnull=True)))


def test_a_model_that_cannot_be_loaded_changes_nothing(db, capsys):
    with pytest.raises(CommandError, match="/nowhere/no-such-model"):
        call_command("reembed", "--model", "/nowhere/no-such-model", verbosity=0)
    assert column_storage("memories_memory", "embedding_next") is None
    assert not EmbeddingSpace.objects.filter(key="next").exists()


def test_a_killed_switch_resumes_and_another_model_waits_for_it(switchable, monkeypatch):
    alice = make_tenant("alice")
    for i in range(10):
        alice.post(URL, {"content": f"Note number {i}", "user_id": "u1"})
    monkeypatch.setattr(embedding_switch, "BATCH", 4)

    def killed(name: str, done: int, total: int | None = None) -> None:
        raise KeyboardInterrupt  # after the first batch is written

    with pytest.raises(KeyboardInterrupt):
        embedding_switch.embeddings_switch(
            spec=EmbedderSpec("local", tiny_embedder(32)), progress=killed
        )
    assert EmbeddingSpace.objects.get(key="next").stage == "filling"
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory WHERE embedding_next IS NOT NULL")
        assert cursor.fetchone()[0] == 4
    # searches still answer from the old vectors meanwhile
    hits = alice.post(f"{URL}search/", {"query": "Note number 3", "mode": "semantic"}).json()
    assert hits["results"][0]["content"] == "Note number 3"

    with pytest.raises(CommandError, match=r"a switch to .*embedder-32.* is under way"):
        call_command("reembed", "--model", tiny_embedder(48), verbosity=0)
    call_command("reembed", verbosity=0)  # the unfinished switch, to its end
    assert EmbeddingSpace.objects.get(key="default").dimensions == 32
    assert_every_vector_from(tiny(), list(Memory.objects.all()))
