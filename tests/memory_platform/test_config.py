"""`Memory.from_config`: the specification's (and mem0's) configuration mapped to the
platform's settings, or refused naming what to use instead; arguments checked as the REST
wrappers check them."""

from __future__ import annotations

import pytest

from memory_platform import ConfigurationError, Memory, ValidationError
from memory_platform.config import plan_of


def test_no_configuration_is_the_embedded_store_offline_in_the_default_project() -> None:
    plan = plan_of(None)
    assert (plan.environment, plan.project, plan.graph, plan.prompt) == ({}, "default", False, None)


def test_llm_providers_map_to_their_openai_compatible_endpoints(monkeypatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    openai = plan_of({"llm": {"provider": "openai", "config": {"model": "m", "api_key": "k"}}})
    assert openai.environment == {
        "MEMORY_LLM_BASE_URL": "",
        "MEMORY_LLM_API_KEY": "k",
        "MEMORY_LLM_MODEL": "m",
    }
    ollama = plan_of({"llm": {"provider": "ollama", "config": {"ollama_base_url": "http://h:1"}}})
    assert ollama.environment["MEMORY_LLM_BASE_URL"] == "http://h:1/v1"
    groq = plan_of({"llm": {"provider": "groq", "config": {"temperature": 0.2}}})
    assert groq.environment["MEMORY_LLM_API_KEY"] == "gsk-test"
    assert groq.notes == ["llm temperature: the platform asks at temperature 0"]


def test_an_llm_without_a_key_or_an_unknown_provider_is_refused(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        plan_of({"llm": {"provider": "openai", "config": {}}})
    with pytest.raises(ConfigurationError, match=r"provider 'openai' with config\.base_url"):
        plan_of({"llm": {"provider": "azure_openai", "config": {}}})


def test_embedders_map_to_the_local_models_or_an_openai_compatible_endpoint() -> None:
    model = "sentence-transformers/all-MiniLM-L6-v2"
    local = {"provider": "huggingface", "config": {"model": model}}
    assert plan_of({"embedder": local}).environment == {
        "MEMORY_EMBEDDING_PROVIDER": "local",
        "MEMORY_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
    }
    remote = {"provider": "ollama", "config": {"model": "nomic-embed-text"}}
    assert plan_of({"embedder": remote}).environment["MEMORY_EMBEDDING_BASE_URL"] == (
        "http://localhost:11434/v1"
    )
    with pytest.raises(ConfigurationError, match="huggingface"):
        plan_of({"embedder": {"provider": "vertexai", "config": {}}})


def test_vector_stores_other_than_pgvector_are_refused_naming_it() -> None:
    with pytest.raises(ConfigurationError, match=r"in-memory store is not supported.*pgvector"):
        plan_of({"vector_store": {"provider": "memory", "config": {}}})
    config = {"host": "db", "port": 5433, "dbname": "mem", "user": "me", "password": "p@ss"}
    config["collection_name"] = "Team-A"
    plan = plan_of({"vector_store": {"provider": "pgvector", "config": config}})
    assert plan.environment["DATABASE_URL"] == "postgresql://me:p%40ss@db:5433/mem"
    assert plan.project == "team-a"


def test_graph_results_are_on_with_the_postgres_graph_and_neo4j_is_refused() -> None:
    assert plan_of({"graph_store": {"provider": "postgres"}}).graph is True
    assert plan_of({"enable_graph": True}).graph is True
    with pytest.raises(ConfigurationError, match="kept in PostgreSQL"):
        plan_of({"graph_store": {"provider": "neo4j", "config": {"url": "bolt://h"}}})


def test_prompts_history_and_unknown_keys() -> None:
    assert plan_of({"custom_prompts": {"fact_extraction": "Only orders."}}).prompt == "Only orders."
    assert plan_of({"custom_fact_extraction_prompt": "Only orders."}).prompt == "Only orders."
    with pytest.raises(ConfigurationError, match="update-decision instructions"):
        plan_of({"custom_update_memory_prompt": "Never delete."})
    assert plan_of({"history_db_path": "/tmp/h.db"}).notes  # accepted: history is in PostgreSQL
    with pytest.raises(ConfigurationError, match="unknown configuration key 'vectorstore'"):
        plan_of({"vectorstore": {}})


def test_a_process_opens_one_store_with_one_embedder(db, tmp_path) -> None:
    with pytest.raises(ConfigurationError, match="already opened its store"):
        Memory.from_config({"data_dir": str(tmp_path)})
    with pytest.raises(ConfigurationError, match="vectors have 384"):
        Memory.from_config({"embedder": {"provider": "openai", "config": {"embedding_dims": 1536}}})


def test_the_configured_extraction_prompt_is_used_when_an_add_gives_none(db, fake_openai) -> None:
    memory = Memory.from_config({"custom_prompts": {"fact_extraction": "Only orders."}})
    fake_openai.reply({"facts": []}, {"facts": []})
    memory.add("Order 42 shipped", user_id="u1")
    memory.add("Order 43 shipped", user_id="u1", prompt="Only shipments.")
    systems = [r["body"]["messages"][0]["content"] for r in fake_openai.chat_requests()]
    assert systems[0].startswith("Only orders.") and systems[1].startswith("Only shipments.")


def test_arguments_are_checked_as_the_rest_wrappers_check_them(db) -> None:
    memory = Memory()
    with pytest.raises(ValidationError) as refused:
        memory.search("", user_id="u1")
    assert "query" in refused.value.fields
    with pytest.raises(ValidationError, match="limit: at most 100"):
        memory.search("tea", user_id="u1", limit=1000)
    added = memory.add("I like tea", user_id=42)["results"][0]
    assert memory.get(added["id"])["user_id"] == "42"  # mem0 reads integer ids as strings
