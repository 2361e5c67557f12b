"""Cross-encoder reranking behind one small interface.

`get_reranker()` loads the sentence-transformers `CrossEncoder` MEMORY_SEARCH_RERANKER names
(a model name in the local cache, fetched where the network allows, or a directory) once per
process, lazily; None when the setting is empty. It scores (query, text) pairs jointly, which
a bi-encoder's vectors cannot: memories/selectors/search/rerank.py re-orders the best hybrid
hits with it.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any, Protocol

from django.conf import settings

from platformcore.lib.errors import ProviderError


class Reranker(Protocol):
    model_name: str

    def load(self) -> Any: ...

    def score(self, query: str, texts: list[str]) -> list[float]:
        """Relevance of each text to the query, in [0, 1], higher is better."""
        ...


@functools.cache
def get_reranker() -> Reranker | None:
    match settings.MEMORY_SEARCH_RERANKER:
        case "":
            return None
        case name:
            return CrossEncoderReranker(name)


class CrossEncoderReranker:
    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self._model: Any = None
        self._lock = threading.Lock()

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        model = self.load()
        try:
            logits = model.predict(
                [(query, text) for text in texts],
                batch_size=len(texts),
                activation_fn=_identity,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        except Exception as exc:
            raise ProviderError(f"reranking failed: {exc}") from exc
        return [_sigmoid(float(value)) for value in logits.reshape(len(texts), -1)[:, 0]]

    def load(self) -> Any:
        """The model, loaded on first use (outside any search's time budget)."""
        with self._lock:
            if self._model is None:
                try:
                    # imported here: sentence-transformers loads PyTorch, slow to import and
                    # needed only once a reranker is used
                    from sentence_transformers import CrossEncoder

                    self._model = CrossEncoder(self.model_name, device="cpu")
                except Exception as exc:
                    raise ProviderError(
                        f"cannot load the reranker {self.model_name!r}: {exc}"
                    ) from exc
        return self._model


def _identity(value: Any) -> Any:
    return value


def _sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(logit, 50.0), -50.0)))
