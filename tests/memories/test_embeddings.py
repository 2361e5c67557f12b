"""Embedding providers, vectors stored on write, back-fill, and model-change detection."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memories.embeddings import get_embedder
from memories.models import EmbeddingSpace, Memory
from memories.services.embedding_space import (
    Space,
    check_embedding_space,
    configured_space,
    embedding_space_record,
)
from tests.fakes.openai_server import FakeOpenAI, fake_vector
from tests.tiny_models import tiny_embedder

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/"


@pytest.fixture
def fresh_embedder():
    get_embedder.cache_clear()
    yield
    get_embedder.cache_clear()


@pytest.fixture
def openai_embeddings(settings, fresh_embedder):
    with FakeOpenAI() as fake:
        settings.MEMORY_EMBEDDING_PROVIDER = "openai"
        settings.MEMORY_EMBEDDING_MODEL = "text-embedding-3-small"
        settings.MEMORY_EMBEDDING_BASE_URL = fake.base_url
        settings.MEMORY_EMBEDDING_API_KEY = "test-key"
        settings.MEMORY_EMBEDDING_TIMEOUT = 5.0
        yield fake


@pytest.fixture
def embeddings_down(settings, fresh_embedder):
    settings.MEMORY_EMBEDDING_PROVIDER = "openai"
    settings.MEMORY_EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there
    settings.MEMORY_EMBEDDING_TIMEOUT = 1.0


def test_local_embedder_gives_normalised_384_dimension_vectors(fresh_embedder) -> None:
    embedder = get_embedder()
    vectors = embedder.embed_batch(["first text", "second text"])
    assert embedder.model_name == "all-MiniLM-L6-v2" and embedder.dimensions == 384
    assert len(vectors) == 2 and all(len(v) == 384 for v in vectors)
    assert sum(x * x for x in vectors[0]) == pytest.approx(1.0, rel=1e-4)


def test_a_single_query_embeds_to_the_same_vector_as_a_batch(fresh_embedder) -> None:
    embedder = get_embedder()
    texts = ["how do I train my dog", "a much longer query " * 60]  # the second is truncated
    batch = embedder.embed_batch(texts)
    for text, vector in zip(texts, batch, strict=True):
        assert embedder.embed(text) == pytest.approx(vector, abs=1e-6)


def test_onnx_and_torch_runtimes_give_the_same_vectors(settings, tmp_path) -> None:
    from memories.embeddings.local import LocalEmbedder

    settings.DATA_DIR = tmp_path
    texts = ["how do I train my dog", "", "short", "a much longer text " * 60, "mid length one"]
    onnx = LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=2, runtime="onnx")
    torch = LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=2, runtime="torch")
    batch = onnx.embed_batch(texts)  # length-sorted chunks of 2 over two workers, in order
    assert onnx.runtime == "onnx" and list((tmp_path / "models").glob("*.onnx"))
    for mine, theirs in zip(batch, torch.embed_batch(texts), strict=True):
        assert mine == pytest.approx(theirs, abs=1e-5)
    assert onnx.embed(texts[0]) == pytest.approx(torch.embed(texts[0]), abs=1e-5)


def test_the_exported_model_is_reused_by_later_processes(settings, tmp_path) -> None:
    from memories.embeddings.local import LocalEmbedder

    settings.DATA_DIR = tmp_path
    LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=32).embed("first process")
    [exported] = (tmp_path / "models").glob("*.onnx")
    written = exported.stat().st_mtime_ns
    LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=32).embed("second process")
    assert exported.stat().st_mtime_ns == written
    assert not list((tmp_path / "models").glob("*.partial"))


def test_a_later_process_embeds_with_the_tokenizer_alone_and_gets_the_same_vectors(
    settings, tmp_path
) -> None:
    """Once the graph is exported, an embedder needs no PyTorch model: the tokenizer file and
    the graph give the vectors sentence-transformers gives (stripped, truncated, padded)."""
    from memories.embeddings.local import LocalEmbedder
    from memories.embeddings.local_onnx import TokenizerOnly

    settings.DATA_DIR = tmp_path
    texts = ["  how do I train my dog  ", "", "short", "a much longer text " * 60, "mid one"]
    first = LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=2, runtime="onnx")
    exported = first.embed_batch(texts)  # exports the graph from the whole model
    later = LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=2, runtime="onnx")
    vectors = later.embed_batch(texts)
    assert isinstance(later._model, TokenizerOnly)
    torch = LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=2, runtime="torch")
    for mine, onnx, theirs in zip(vectors, exported, torch.embed_batch(texts), strict=True):
        assert mine == pytest.approx(onnx, abs=1e-6)
        assert mine == pytest.approx(theirs, abs=1e-5)
    assert later.embed(texts[0]) == pytest.approx(torch.embed(texts[0]), abs=1e-5)
    assert later.dimensions == 384


def test_onnx_runtime_falls_back_to_torch_when_it_cannot_export(settings, tmp_path, caplog) -> None:
    from memories.embeddings.local import LocalEmbedder

    (tmp_path / "not-a-directory").write_text("")
    settings.DATA_DIR = tmp_path / "not-a-directory"  # the model cannot be written there
    embedder = LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=32, runtime="onnx")
    vector = embedder.embed("still embedded")
    assert embedder.runtime == "torch" and len(vector) == 384
    assert "embedding with PyTorch" in caplog.text


def test_int8_queries_stay_close_to_the_fp32_vectors_memories_are_stored_with(
    settings, tmp_path
) -> None:
    from memories.embeddings import local_onnx
    from memories.embeddings.local import LocalEmbedder

    settings.DATA_DIR = tmp_path
    settings.MEMORY_EMBEDDING_QUERY_PRECISION = "int8"
    embedder = LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=32)
    texts = [
        "how to train dogs",
        "who fixed the deploy pipeline last week",
        "Alice prefers dark mode in every editor she uses",
    ]
    for text, stored in zip(texts, embedder.embed_batch(texts), strict=True):
        query = np.array(embedder.embed_query(text))
        assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
        assert 0.98 < float(np.array(stored) @ query) < 0.99999  # close, and really int8
        assert embedder.embed(text) == pytest.approx(stored, abs=1e-6)  # memories stay fp32
    [fp32] = [path for path in (tmp_path / "models").glob("*.onnx") if "int8" not in path.name]
    assert local_onnx.quantized_path(fp32).is_file()

    settings.MEMORY_EMBEDDING_QUERY_PRECISION = "fp32"
    assert embedder.embed_query(texts[0]) == embedder.embed(texts[0])


def test_queries_stay_in_fp32_when_the_int8_graph_cannot_be_made(
    settings, tmp_path, caplog
) -> None:
    from memories.embeddings import local_onnx
    from memories.embeddings.local import LocalEmbedder

    settings.DATA_DIR = tmp_path
    settings.MEMORY_EMBEDDING_QUERY_PRECISION = "int8"
    embedder = LocalEmbedder(model_name="all-MiniLM-L6-v2", batch_size=32)
    embedder.embed("the fp32 graph is exported first")
    [fp32] = (tmp_path / "models").glob("*.onnx")
    local_onnx.quantized_path(fp32).mkdir()  # something that is not a model where it goes
    assert embedder.embed_query("how to train dogs") == embedder.embed("how to train dogs")
    assert "search queries in fp32, not int8" in caplog.text


def test_semantic_search_with_int8_queries_finds_by_meaning(
    alice, remember, settings, fresh_embedder
) -> None:
    settings.MEMORY_EMBEDDING_QUERY_PRECISION = "int8"
    remember("canine behavior training tips")
    remember("quarterly tax filing deadlines")
    body = alice.post(f"{URL}search/", {"query": "how to train dogs", "mode": "semantic"}).json()
    assert [hit["content"] for hit in body["results"]] == ["canine behavior training tips"]


def test_openai_embedder_batches_requests_to_the_server(openai_embeddings, settings) -> None:
    settings.MEMORY_EMBEDDING_BATCH_SIZE = 2
    get_embedder.cache_clear()
    vectors = get_embedder().embed_batch(["a", "b", "c"])
    assert vectors[2] == pytest.approx(fake_vector("c", 384))
    calls = [r["body"] for r in openai_embeddings.requests if r["path"].endswith("/embeddings")]
    assert [len(call["input"]) for call in calls] == [2, 1]


def test_memories_are_embedded_on_write_and_searchable_by_meaning(alice, openai_embeddings) -> None:
    created = alice.post(URL, {"content": "the staging database password rotates", "user_id": "u1"})
    assert created.json()["has_embedding"] is True
    row = Memory.objects.get(pk=created.json()["id"])
    assert list(row.embedding) == pytest.approx(fake_vector(row.content, 384), abs=1e-6)
    body = alice.post(
        f"{URL}search/",
        {"query": "the staging database password rotates", "mode": "semantic"},
    ).json()
    assert [hit["id"] for hit in body["results"]] == [created.json()["id"]]


def test_a_failed_embedding_keeps_the_memory_and_backfill_fills_it(
    alice, embeddings_down, settings, capsys
) -> None:
    created = alice.post(URL, {"content": "stored while the provider was down", "user_id": "u1"})
    assert created.status_code == 201 and created.json()["has_embedding"] is False

    with pytest.raises(CommandError):  # still down: non-zero exit, nothing lost
        call_command("backfill_embeddings", "--no-progress")

    with FakeOpenAI() as fake:
        settings.MEMORY_EMBEDDING_BASE_URL = fake.base_url
        get_embedder.cache_clear()
        call_command("backfill_embeddings", "--no-progress", "--project", "alice")
    assert "1 embedded, 0 failed" in capsys.readouterr().out
    assert Memory.objects.get(pk=created.json()["id"]).embedding is not None


def test_hybrid_search_degrades_to_keywords_when_embeddings_fail(
    alice, remember, embeddings_down
) -> None:
    remember("the deploy runbook lives in the wiki")
    body = alice.post(f"{URL}search/", {"query": "deploy runbook"}).json()
    assert [hit["content"] for hit in body["results"]] == ["the deploy runbook lives in the wiki"]
    assert body["results"][0]["score_parts"]["semantic_unavailable"] == 1.0
    semantic = alice.post(f"{URL}search/", {"query": "deploy runbook", "mode": "semantic"})
    assert semantic.status_code == 502
    assert semantic.json()["error"]["code"] == "provider_error"


def test_the_first_migrate_records_the_embedding_model() -> None:
    row = EmbeddingSpace.objects.get(key="default")
    assert (row.model_name, row.dimensions) == ("all-MiniLM-L6-v2", 384)


def test_a_changed_embedding_model_is_a_startup_error(settings, fresh_embedder) -> None:
    assert check_embedding_space(databases=["default"]) == []
    settings.MEMORY_EMBEDDING_MODEL = tiny_embedder(32)
    get_embedder.cache_clear()
    errors = check_embedding_space(databases=["default"])
    assert [error.id for error in errors] == ["memories.E001"]
    assert "all-MiniLM-L6-v2 (384" in errors[0].msg and "embedder-32 (32" in errors[0].msg
    assert "python manage.py reembed --model" in errors[0].hint


def test_a_model_that_cannot_be_loaded_is_a_startup_error_naming_it(settings, fresh_embedder):
    settings.MEMORY_EMBEDDING_MODEL = "/nowhere/no-such-model"
    get_embedder.cache_clear()
    errors = check_embedding_space(databases=["default"])
    assert [error.id for error in errors] == ["memories.E002"]
    assert "/nowhere/no-such-model" in errors[0].msg


def test_reembed_all_rewrites_every_vector_and_records_the_new_model(
    alice, remember, openai_embeddings, capsys
) -> None:
    embedding_space_record(space=Space("local", "all-MiniLM-L6-v2", 384))
    memory = remember("a memory embedded by the old model")
    Memory.objects.filter(pk=memory["id"]).update(embedding=[0.0] * 383 + [1.0])
    assert check_embedding_space(databases=["default"]) != []

    call_command("backfill_embeddings", "--reembed-all", "--no-progress")

    assert "embedding model recorded" in capsys.readouterr().out
    assert check_embedding_space(databases=["default"]) == []
    assert configured_space().model_name == "text-embedding-3-small"
    row = Memory.objects.get(pk=memory["id"])
    assert list(row.embedding) == pytest.approx(fake_vector(row.content, 384), abs=1e-6)


def test_backfill_of_one_project_leaves_the_others_alone(alice, bob, embeddings_down) -> None:
    alice.post(URL, {"content": "alice's note", "user_id": "u1"})
    bob.post(URL, {"content": "bob's note", "user_id": "u1"})
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        from django.conf import settings

        patch.setattr(settings, "MEMORY_EMBEDDING_BASE_URL", fake.base_url)
        get_embedder.cache_clear()
        call_command("backfill_embeddings", "--no-progress", "--project", "bob")
    assert Memory.objects.get(project=bob.project).embedding is not None
    assert Memory.objects.get(project=alice.project).embedding is None


@pytest.mark.django_db(transaction=True)
def test_the_vector_index_can_be_rebuilt_with_other_parameters(capsys) -> None:
    from django.db import connection

    def definition() -> str:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embedding_hnsw'"
            )
            return cursor.fetchone()[0]

    call_command("rebuild_vector_index", "--m", "24", "--ef-construction", "100")
    assert "m='24'" in definition() and "ef_construction='100'" in definition()
    # live memories outside the deferred backlog only, as the model declares it
    assert "WHERE ((deleted_at IS NULL) AND (NOT vector_pending))" in definition()
    call_command("rebuild_vector_index", "--m", "16", "--ef-construction", "128")
    assert "m='16'" in definition() and "ef_construction='128'" in definition()
    with pytest.raises(CommandError):
        call_command("rebuild_vector_index", "--m", "1")


def test_bulk_store_embeds_memories_and_their_entity_names_in_few_batches(
    alice, openai_embeddings
) -> None:
    from entities.models import Entity
    from memories.services.bulk import memories_create_bulk
    from memories.services.memories import MemoryInput
    from platformcore.lib.actor import Actor

    people = ["Alice", "Bob", "Chen", "Dana", "Elif", "Farid"]
    items = [
        MemoryInput(content=f"{name} works at Google in Berlin", user_id="u1") for name in people
    ]
    memories_create_bulk(project=alice.project, items=items, actor=Actor("test", "bulk"))

    names = set(Entity.objects.filter(project=alice.project).values_list("name", flat=True))
    assert {"Google", *people} <= names
    embedding_calls = [r for r in openai_embeddings.requests if r["path"].endswith("/embeddings")]
    assert len(embedding_calls) <= 3  # the memories, then every entity name at once


def test_a_server_warms_the_local_model_up_in_the_background(settings):
    """The ASGI app and `manage.py mcp` call warm_up(): the local model loads in a thread;
    nothing happens when it is switched off or the provider is remote."""
    from memories.embeddings import get_embedder, warm_up

    thread = warm_up()
    assert thread is not None
    thread.join(timeout=120)
    assert not thread.is_alive()
    embedder = get_embedder()
    assert len(embedder.embed_query("warm up")) == 384
    settings.MEMORY_EMBEDDING_WARMUP = False
    assert warm_up() is None
    settings.MEMORY_EMBEDDING_WARMUP = True
    settings.MEMORY_EMBEDDING_PROVIDER = "openai"
    assert warm_up() is None
