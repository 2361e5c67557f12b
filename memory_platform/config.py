"""`Memory.from_config({...})`: the fact-memory specification's (and mem0's) configuration,
mapped to the platform's settings, or refused with what to use instead.

What maps (docs/compat-mem0.md, "In-process"):
- `llm`: any OpenAI-compatible chat model: `openai` (`base_url`, `api_key`), and the providers
  that serve one (`ollama`, `lmstudio`, `vllm`, `deepseek`, `groq`, `together`, `xai`,
  `anthropic` and `gemini` through their OpenAI-compatible endpoints);
- `embedder`: the local sentence-transformers models (`huggingface`) or an OpenAI-compatible
  embeddings endpoint (`openai`, `ollama`, `lmstudio`), of the store's dimensions;
- `vector_store`: `pgvector` (a `connection_string`, or `host`, `port`, `dbname`, `user`,
  `password`) instead of the embedded PostgreSQL; `collection_name` names the project;
- `graph_store`: `{"provider": "postgres"}` (the knowledge graph beside the memories) turns on
  graph results (`relations`), as does `enable_graph: true`;
- `custom_prompts.fact_extraction` (mem0: `custom_fact_extraction_prompt`): the extraction
  prompt of every `add` that gives none;
- ours: `data_dir` (the embedded store's directory) and `project` (the tenant's slug).

Nothing here imports Django: the mapping decides the environment the platform's settings are
read from, before they are.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from memory_platform.errors import ConfigurationError

OPENAI_COMPATIBLE = "any OpenAI-compatible server: provider 'openai' with config.base_url"
# provider -> (its OpenAI-compatible base URL, the environment variable holding its key)
LLM_PROVIDERS: dict[str, tuple[str | None, str | None]] = {
    "openai": (None, "OPENAI_API_KEY"),
    "ollama": ("http://localhost:11434/v1", None),
    "lmstudio": ("http://localhost:1234/v1", None),
    "vllm": ("http://localhost:8000/v1", None),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY"),
    "anthropic": ("https://api.anthropic.com/v1/", "ANTHROPIC_API_KEY"),
    "gemini": ("https://generativelanguage.googleapis.com/v1beta/openai/", "GOOGLE_API_KEY"),
    "google": ("https://generativelanguage.googleapis.com/v1beta/openai/", "GOOGLE_API_KEY"),
}
REMOTE_EMBEDDERS: dict[str, tuple[str | None, str | None]] = {
    "openai": (None, "OPENAI_API_KEY"),
    "ollama": ("http://localhost:11434/v1", None),
    "lmstudio": ("http://localhost:1234/v1", None),
}
LOCAL_EMBEDDERS = ("huggingface", "sentence_transformers", "sentence-transformers", "local")
GRAPH_STORES = ("neo4j", "memgraph", "neptune", "kuzu", "falkordb")
KEYS = (
    "vector_store",
    "llm",
    "embedder",
    "graph_store",
    "enable_graph",
    "history",
    "history_db_path",
    "custom_prompts",
    "custom_fact_extraction_prompt",
    "custom_update_memory_prompt",
    "version",
    "data_dir",
    "project",
)
DEFAULT_PROJECT = "default"


@dataclass
class Plan:
    """What a configuration asks of the process and of one `Memory`."""

    environment: dict[str, str] = field(default_factory=dict)  # the platform's MEMORY_* / DB
    project: str = DEFAULT_PROJECT
    graph: bool = False
    prompt: str | None = None  # the extraction prompt of an add that gives none
    notes: list[str] = field(default_factory=list)  # accepted, without effect


def plan_of(config: dict[str, Any] | None) -> Plan:
    """The plan for `config` (None: the defaults), or ConfigurationError naming the key."""
    config = dict(config or {})
    unknown = sorted(set(config) - set(KEYS))
    if unknown:
        accepted = ", ".join(KEYS)
        raise ConfigurationError(f"unknown configuration key {unknown[0]!r} (accepted: {accepted})")
    plan = Plan()
    if config.get("data_dir"):
        plan.environment["MEMORY_DATA_DIR"] = _path(config["data_dir"])
    _vector_store(plan, _section(config, "vector_store"))
    _llm(plan, _section(config, "llm"))
    _embedder(plan, _section(config, "embedder"))
    _graph(plan, config)
    _prompts(plan, config)
    if config.get("history") or config.get("history_db_path"):
        plan.notes.append("history is kept in PostgreSQL beside the memories: db_path ignored")
    if config.get("project"):
        plan.project = _slug(config["project"], "project")
    return plan


def _path(value: Any) -> str:
    if not isinstance(value, str | os.PathLike):
        raise ConfigurationError("data_dir must be a path")
    return os.path.abspath(os.path.expanduser(os.fspath(value)))


def _section(config: dict[str, Any], name: str) -> tuple[str | None, dict[str, Any]]:
    """(provider, its config) of a section, or (None, {}) when it is absent."""
    section = config.get(name)
    if section is None:
        return None, {}
    if not isinstance(section, dict):
        raise ConfigurationError(f"{name} must be an object with provider and config")
    provider = section.get("provider")
    options = section.get("config") or {}
    if not isinstance(provider, str) or not isinstance(options, dict):
        raise ConfigurationError(f"{name} needs a provider (a string) and a config object")
    return provider.lower(), options


def _vector_store(plan: Plan, section: tuple[str | None, dict[str, Any]]) -> None:
    provider, options = section
    if provider is None:
        return
    if provider != "pgvector":
        what = "an in-memory store" if provider == "memory" else f"vector store {provider!r}"
        raise ConfigurationError(
            f"{what} is not supported: Memory Platform keeps memories in PostgreSQL with "
            "pgvector. Leave vector_store out for the embedded PostgreSQL in the data "
            "directory, or use provider 'pgvector' with a connection_string (or host, port, "
            "dbname, user, password)"
        )
    url = options.get("connection_string") or _database_url(options)
    if url:
        plan.environment["DATABASE_URL"] = url
    if options.get("collection_name"):
        plan.project = _slug(options["collection_name"], "vector_store.config.collection_name")
    dims = options.get("embedding_model_dims")
    if dims is not None:
        plan.environment["_MEMORY_EXPECTED_DIMENSIONS"] = str(dims)


def _database_url(options: dict[str, Any]) -> str | None:
    if not any(options.get(key) for key in ("host", "dbname", "database", "user")):
        return None
    user = quote(str(options.get("user") or "postgres"), safe="")
    password = options.get("password")
    auth = f"{user}:{quote(str(password), safe='')}" if password else user
    host = options.get("host") or "localhost"
    port = options.get("port") or 5432
    dbname = options.get("dbname") or options.get("database") or "postgres"
    return f"postgresql://{auth}@{host}:{port}/{dbname}"


def _llm(plan: Plan, section: tuple[str | None, dict[str, Any]]) -> None:
    provider, options = section
    if provider is None:
        return
    if provider not in LLM_PROVIDERS:
        known = ", ".join(LLM_PROVIDERS)
        raise ConfigurationError(
            f"llm provider {provider!r} is not supported: the platform talks to "
            f"{OPENAI_COMPATIBLE} (or one of: {known})"
        )
    default_url, key_variable = LLM_PROVIDERS[provider]
    base_url = _base_url(options, provider) or default_url
    api_key = options.get("api_key") or (os.environ.get(key_variable) if key_variable else None)
    if not base_url and not api_key:
        raise ConfigurationError(
            f"llm provider {provider!r} needs config.api_key (or {key_variable}) or config.base_url"
        )
    plan.environment["MEMORY_LLM_BASE_URL"] = base_url or ""
    plan.environment["MEMORY_LLM_API_KEY"] = str(api_key or "not-needed")
    if options.get("model"):
        plan.environment["MEMORY_LLM_MODEL"] = str(options["model"])
    unused = sorted(set(options) & {"temperature", "max_tokens", "top_p"})
    if unused:
        plan.notes.append(f"llm {', '.join(unused)}: the platform asks at temperature 0")


def _embedder(plan: Plan, section: tuple[str | None, dict[str, Any]]) -> None:
    provider, options = section
    if provider is None:
        return
    dims = options.get("embedding_dims") or options.get("dimensions")
    if dims is not None:
        plan.environment["_MEMORY_EXPECTED_DIMENSIONS"] = str(dims)
    if provider in LOCAL_EMBEDDERS:
        plan.environment["MEMORY_EMBEDDING_PROVIDER"] = "local"
        if options.get("model"):
            plan.environment["MEMORY_EMBEDDING_MODEL"] = _local_model(str(options["model"]))
        return
    if provider not in REMOTE_EMBEDDERS:
        known = ", ".join([*REMOTE_EMBEDDERS, LOCAL_EMBEDDERS[0]])
        raise ConfigurationError(
            f"embedder provider {provider!r} is not supported: use the local sentence-"
            f"transformers models ('huggingface'), or {OPENAI_COMPATIBLE} (one of: {known})"
        )
    default_url, key_variable = REMOTE_EMBEDDERS[provider]
    api_key = options.get("api_key") or (os.environ.get(key_variable) if key_variable else None)
    plan.environment["MEMORY_EMBEDDING_PROVIDER"] = "openai"
    base_url = _base_url(options, provider) or default_url
    plan.environment["MEMORY_EMBEDDING_BASE_URL"] = base_url or ""
    plan.environment["MEMORY_EMBEDDING_API_KEY"] = str(api_key or "not-needed")
    if options.get("model"):
        plan.environment["MEMORY_EMBEDDING_MODEL"] = str(options["model"])


def _local_model(model: str) -> str:
    """mem0 names Hugging Face models with their organisation; the platform by name."""
    return model.removeprefix("sentence-transformers/")


def _base_url(options: dict[str, Any], provider: str) -> str | None:
    url = (
        options.get("base_url")
        or options.get(f"{provider}_base_url")
        or options.get("openai_base_url")
        or (os.environ.get("OPENAI_BASE_URL") if provider == "openai" else None)
    )
    if not url:
        return None
    url = str(url).rstrip("/")
    if provider in ("ollama", "lmstudio") and not url.endswith("/v1"):
        url += "/v1"  # mem0 gives Ollama's own root; its OpenAI-compatible API is under /v1
    return url


def _graph(plan: Plan, config: dict[str, Any]) -> None:
    provider, _options = _section(config, "graph_store")
    if provider in GRAPH_STORES:
        raise ConfigurationError(
            f"graph store {provider!r} is not supported: the knowledge graph is kept in "
            "PostgreSQL beside the memories. Use {'graph_store': {'provider': 'postgres'}} "
            "(or enable_graph=True) for graph results"
        )
    if provider not in (None, "postgres"):
        raise ConfigurationError(
            f"graph store {provider!r} is not supported: use {{'graph_store': {{'provider': "
            "'postgres'}}}"
        )
    plan.graph = provider == "postgres" or config.get("enable_graph") is True


def _prompts(plan: Plan, config: dict[str, Any]) -> None:
    prompts = config.get("custom_prompts") or {}
    if not isinstance(prompts, dict):
        raise ConfigurationError("custom_prompts must be an object")
    extraction = prompts.get("fact_extraction") or config.get("custom_fact_extraction_prompt")
    if extraction is not None and not isinstance(extraction, str):
        raise ConfigurationError("custom_prompts.fact_extraction must be a string")
    plan.prompt = extraction or None
    if prompts.get("update_decision") or config.get("custom_update_memory_prompt"):
        raise ConfigurationError(
            "a custom update-decision prompt does not replace the platform's: give the "
            "project's own update-decision instructions, which are appended to it "
            '(PUT /api/v1/project/prompts/ {"kind": "update_decision", "text": ...})'
        )


def _slug(value: Any, name: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,49}", value):
        raise ConfigurationError(f"{name} must be a slug: letters, digits, - and _")
    return value.lower()
