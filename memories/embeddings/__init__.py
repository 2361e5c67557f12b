"""Embedding providers behind one small interface.

`get_embedder()` picks the provider named by MEMORY_EMBEDDING_PROVIDER, imports its SDK only
then, and keeps one instance per process (the local model loads lazily on first use).
A provider may also offer `embed_query(text)` for search queries (the local one's int8
option, MEMORY_EMBEDDING_QUERY_PRECISION); search falls back to `embed` without it.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    model_name: str
    dimensions: int

    def embed(self, text: str) -> list[float]: ...

    def embed_batch(self, texts: list[str]) -> list[list[float]]: ...


@functools.cache
def get_embedder() -> Embedder:
    match settings.MEMORY_EMBEDDING_PROVIDER:
        case "local":
            from memories.embeddings.local import LocalEmbedder

            return LocalEmbedder(
                model_name=settings.MEMORY_EMBEDDING_MODEL or "all-MiniLM-L6-v2",
                batch_size=settings.MEMORY_EMBEDDING_BATCH_SIZE,
                runtime=settings.MEMORY_EMBEDDING_RUNTIME,
            )
        case "openai":
            from memories.embeddings.openai import OpenAIEmbedder

            return OpenAIEmbedder(
                model_name=settings.MEMORY_EMBEDDING_MODEL or "text-embedding-3-small",
                dimensions=settings.MEMORY_EMBEDDING_DIMENSIONS,
                base_url=settings.MEMORY_EMBEDDING_BASE_URL or None,
                api_key=settings.MEMORY_EMBEDDING_API_KEY or "not-needed",
                timeout=settings.MEMORY_EMBEDDING_TIMEOUT,
                batch_size=settings.MEMORY_EMBEDDING_BATCH_SIZE,
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
            getattr(embedder, "embed_query", embedder.embed)("warm up")
        except Exception as exc:  # the first request will load it, and report a failure then
            logger.warning("embedding warm-up failed: %s", exc)

    thread = threading.Thread(target=run, name="embedding-warm-up", daemon=True)
    thread.start()
    return thread
