"""Embedding providers behind one small interface.

`get_embedder()` picks the provider named by MEMORY_EMBEDDING_PROVIDER, imports its SDK only
then, and keeps one instance per process (the local model loads lazily on first use).
A provider may also offer `embed_query(text)` for search queries (the local one's int8
option, MEMORY_EMBEDDING_QUERY_PRECISION); search falls back to `embed` without it.
"""

from __future__ import annotations

import functools
from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


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
