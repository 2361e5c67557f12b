"""Embedding at write time. A failure never loses the memory: it is stored without a vector
and `backfill_embeddings` fills it in later."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from memories.services.embedding_space import store_embedder_for_write, switch_announced
from platformcore.lib.errors import ProviderError

logger = logging.getLogger(__name__)


_prefetched: ContextVar[dict[str, list[float]] | None] = ContextVar("prefetched", default=None)


@contextmanager
def prefetched_embeddings(texts: list[str]) -> Iterator[None]:
    """Embed `texts` in one batch now; `embed_or_none` serves them from memory meanwhile.
    For work that would otherwise embed a few texts at a time in a loop (bulk writes)."""
    unique = list(dict.fromkeys(texts))
    vectors = _embed(unique)
    cache = {text: vector for text, vector in zip(unique, vectors, strict=True) if vector}
    token = _prefetched.set({**(_prefetched.get() or {}), **cache})
    try:
        yield
    finally:
        _prefetched.reset(token)


def embed_or_none(texts: list[str]) -> list[list[float] | None]:
    """Vectors for `texts` in one batch, or Nones if the provider fails."""
    cache = _prefetched.get()
    if cache and switch_announced():  # vectors made before a switch are of the old model
        size = store_embedder_for_write().dimensions
        cache = {text: vector for text, vector in cache.items() if len(vector) == size}
    if not cache:
        return _embed(texts)
    missing = list(dict.fromkeys(text for text in texts if text not in cache))
    fresh = dict(zip(missing, _embed(missing), strict=True))
    return [cache[text] if text in cache else fresh[text] for text in texts]


def _embed(texts: list[str]) -> list[list[float] | None]:
    if not texts:
        return []
    try:
        return list(store_embedder_for_write().embed_batch(texts))
    except ProviderError as exc:
        logger.warning(
            "embedding failed for %d text(s); stored without vectors: %s", len(texts), exc
        )
        return [None] * len(texts)
