"""Embedding at write time. A failure never loses the memory: it is stored without a vector
and `backfill_embeddings` fills it in later."""

from __future__ import annotations

import logging

from memories.embeddings import get_embedder
from memoryplatform.lib.errors import ProviderError

logger = logging.getLogger(__name__)


def embed_or_none(texts: list[str]) -> list[list[float] | None]:
    """Vectors for `texts` in one batch, or Nones if the provider fails."""
    if not texts:
        return []
    try:
        return list(get_embedder().embed_batch(texts))
    except ProviderError as exc:
        logger.warning(
            "embedding failed for %d text(s); stored without vectors: %s", len(texts), exc
        )
        return [None] * len(texts)
