"""Embedding providers behind one small interface.

`get_embedder()` picks the provider named by MEMORY_EMBEDDING_PROVIDER, imports its SDK only
then, and keeps one instance per process (the local model loads lazily on first use). Any
model and any dimension: the dimension comes from the model (or, for a remote server,
MEMORY_EMBEDDING_DIMENSIONS). `embed_query` embeds a search query (the model's query prompt;
the local int8 option), `embed`/`embed_batch` stored texts (the passage prompt).
`memories.embeddings.store` follows a store that `manage.py reembed --model` switched.
"""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memories.embeddings.local import LocalEmbedder
from memories.embeddings.openai import OpenAIEmbedder

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    model_name: str

    @property
    def dimensions(self) -> int: ...

    def embed(self, text: str) -> list[float]: ...

    def embed_batch(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


@dataclass(frozen=True)
class EmbedderSpec:
    """What makes an embedder: the provider, its model, the size asked of a remote server
    (0: the model's own) and the prompts put before queries and stored texts (None: the
    model's own sentence-transformers `prompts`)."""

    provider: str
    model_name: str
    dimensions: int = 0
    query_prompt: str | None = None
    passage_prompt: str | None = None


def configured_spec() -> EmbedderSpec:
    provider = settings.MEMORY_EMBEDDING_PROVIDER
    return EmbedderSpec(
        provider=provider,
        model_name=settings.MEMORY_EMBEDDING_MODEL or DEFAULT_MODELS.get(provider, ""),
        dimensions=settings.MEMORY_EMBEDDING_DIMENSIONS,
        query_prompt=settings.MEMORY_EMBEDDING_QUERY_PROMPT,
        passage_prompt=settings.MEMORY_EMBEDDING_PASSAGE_PROMPT,
    )


DEFAULT_MODELS = {"local": "all-MiniLM-L6-v2", "openai": "text-embedding-3-small"}


@functools.cache
def get_embedder() -> Embedder:
    """The configured embedder (settings), one per process."""
    return make_embedder(configured_spec())


@functools.lru_cache(maxsize=4)
def build_embedder(spec: EmbedderSpec) -> Embedder:
    """An embedder for another model than the configured one (a live switch's), kept."""
    return make_embedder(spec)


def make_embedder(spec: EmbedderSpec) -> Embedder:
    match spec.provider:
        case "local":
            return LocalEmbedder(
                model_name=spec.model_name,
                batch_size=settings.MEMORY_EMBEDDING_BATCH_SIZE,
                runtime=settings.MEMORY_EMBEDDING_RUNTIME,
                query_prompt=spec.query_prompt,
                passage_prompt=spec.passage_prompt,
            )
        case "openai":
            return OpenAIEmbedder(
                model_name=spec.model_name,
                dimensions=spec.dimensions,
                base_url=settings.MEMORY_EMBEDDING_BASE_URL or None,
                api_key=settings.MEMORY_EMBEDDING_API_KEY or "not-needed",
                timeout=settings.MEMORY_EMBEDDING_TIMEOUT,
                batch_size=settings.MEMORY_EMBEDDING_BATCH_SIZE,
                query_prompt=spec.query_prompt or "",
                passage_prompt=spec.passage_prompt or "",
            )
        case other:
            raise ImproperlyConfigured(f"unknown MEMORY_EMBEDDING_PROVIDER {other!r}")


def warm_up() -> threading.Thread | None:
    """Load the local model and its query session in a background thread, so that a server's
    first search does not wait for them (~4 s on a 2-core VM: the weights, the ONNX session);
    requests meanwhile wait on the embedder's own lock, no longer than they would have. None
    when MEMORY_EMBEDDING_WARMUP is off or the provider is remote (nothing to load)."""
    if not settings.MEMORY_EMBEDDING_WARMUP or settings.MEMORY_EMBEDDING_PROVIDER != "local":
        return None

    def run() -> None:
        try:
            embedder = get_embedder()
            embedder.embed_query("warm up")
        except Exception as exc:  # the first request will load it, and report a failure then
            logger.warning("embedding warm-up failed: %s", exc)

    thread = threading.Thread(target=run, name="embedding-warm-up", daemon=True)
    thread.start()
    return thread
